package rls

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
)

// serveGRPC serves s on a loopback port and returns a caller through a real gRPC client;
// both stop in t's cleanup.
func serveGRPC(t testing.TB, s *Service) caller {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	pb.RegisterRateLimitServiceServer(srv, s)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = conn.Close()
		srv.GracefulStop()
		<-done
	})
	client := pb.NewRateLimitServiceClient(conn)
	return func(ctx context.Context, req *pb.RateLimitRequest) (*pb.RateLimitResponse, error) {
		return client.ShouldRateLimit(ctx, req)
	}
}

// TestScenariosGRPC plays the conformance scenarios through a real gRPC server on the
// in-memory backend.
func TestScenariosGRPC(t *testing.T) {
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			clock := newClock()
			s, err := New(newLocal(t, clock), load(t, sc.config), append([]Option{WithClock(clock.Now), WithoutHeaders()}, sc.opts...)...)
			require.NoError(t, err)
			for _, d := range sc.run(context.Background(), s, clock, serveGRPC(t, s)) {
				t.Error(d)
			}
		})
	}
}

func TestHTTP(t *testing.T) {
	clock := newClock()
	s, err := New(newLocal(t, clock), load(t, apiConfig), WithClock(clock.Now), WithoutHeaders())
	require.NoError(t, err)
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "m 1\n") })
	srv := httptest.NewServer(s.Handler(metrics))
	t.Cleanup(srv.Close)
	post := func(body string) (int, string) {
		r, err := http.Post(srv.URL+"/json", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer r.Body.Close()
		b, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		return r.StatusCode, string(b)
	}
	body := `{"domain": "api", "descriptors": [{"entries": [{"key": "org", "value": "o"}]}], "hitsAddend": 9}`
	code, got := post(body)
	require.Equal(t, http.StatusOK, code, got)
	var r pb.RateLimitResponse
	require.NoError(t, protojson.Unmarshal([]byte(got), &r))
	assert.Equal(t, text(resp(ok, st(ok, 10, hour, 1, 3590))), text(&r))

	code, got = post(`{"domain": "api", "descriptors": [{"entries": [{"key": "org", "value": "o"}], "hits_addend": 2}]}`)
	require.Equal(t, http.StatusTooManyRequests, code, got)
	require.NoError(t, protojson.Unmarshal([]byte(got), &r))
	assert.Equal(t, text(resp(over, st(over, 10, hour, 0, 3590))), text(&r))

	for _, bad := range []string{`{"domain": "api", "descriptors": [], "nope": 1}`, `not json`, `{"descriptors": [{}]}`} {
		code, _ = post(bad)
		assert.Equal(t, http.StatusBadRequest, code, bad)
	}
	code, _ = post(`{"domain": "` + strings.Repeat("x", maxJSONBody) + `"}`)
	assert.Equal(t, http.StatusRequestEntityTooLarge, code)

	res, err := http.Get(srv.URL + "/json")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, res.StatusCode)
	for path, want := range map[string]string{"/healthcheck": "OK", "/metrics": "m 1\n"} {
		res, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		assert.Equal(t, http.StatusOK, res.StatusCode, path)
		assert.Equal(t, want, string(b), path)
	}
}
