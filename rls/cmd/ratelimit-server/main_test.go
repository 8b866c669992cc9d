package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sluice-go/ratelimit/internal/redistest"
)

const exampleConfig = "../../../examples/rls/config.yaml"

// start runs the command in-process on loopback ports with args, and returns its gRPC and
// HTTP addresses; the test's cleanup stops it as SIGTERM would and checks it stopped
// cleanly.
func start(t *testing.T, args ...string) (grpcAddr, httpAddr string) {
	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan [2]string, 1)
	done := make(chan error, 1)
	var logs bytes.Buffer
	args = append([]string{"-grpc-addr", "127.0.0.1:0", "-http-addr", "127.0.0.1:0"}, args...)
	go func() {
		done <- run(ctx, args, &lockedWriter{w: &logs}, func(g, h string) { addrs <- [2]string{g, h} })
	}()
	select {
	case a := <-addrs:
		t.Cleanup(func() {
			cancel()
			require.NoError(t, <-done)
		})
		return a[0], a[1]
	case err := <-done:
		cancel()
		t.Fatalf("the server did not start: %v\n%s", err, logs.String())
	}
	return "", ""
}

// TestReadmeFlow is the README's: the example configuration, one curl to /json that
// asks for more than a client address's 5 a minute, answered OVER_LIMIT with a 429; then
// the same over gRPC, the health check and the metrics.
func TestReadmeFlow(t *testing.T) {
	for _, backend := range []string{"memory", "redis"} {
		t.Run(backend, func(t *testing.T) {
			args := []string{"-config", exampleConfig}
			if backend == "redis" {
				args = append(args, "-redis", redistest.NewServer(t).Addr())
			}
			grpcAddr, httpAddr := start(t, args...)
			body := `{"domain":"quickstart","descriptors":[{"entries":[{"key":"remote_address","value":"10.0.0.1"}]}],"hitsAddend":6}`
			res, err := http.Post("http://"+httpAddr+"/json", "application/json", strings.NewReader(body))
			require.NoError(t, err)
			out, _ := io.ReadAll(res.Body)
			res.Body.Close()
			assert.Equal(t, http.StatusTooManyRequests, res.StatusCode)
			assert.Contains(t, string(out), `"overallCode":"OVER_LIMIT"`)

			conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
			require.NoError(t, err)
			defer conn.Close()
			client := pb.NewRateLimitServiceClient(conn)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req := &pb.RateLimitRequest{Domain: "quickstart", Descriptors: []*rlv3.RateLimitDescriptor{
				{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "remote_address", Value: "10.0.0.1"}}},
				{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "user", Value: "health-checker"}}},
			}}
			r, err := client.ShouldRateLimit(ctx, req)
			require.NoError(t, err)
			assert.Equal(t, pb.RateLimitResponse_OK, r.GetOverallCode())
			assert.EqualValues(t, 4, r.GetStatuses()[0].GetLimitRemaining(), "the denied curl took nothing")
			assert.Nil(t, r.GetStatuses()[1].GetCurrentLimit(), "an exempt value")
			assert.Contains(t, headerKeys(r), "RateLimit-Policy")

			for path, want := range map[string]string{"/healthcheck": "OK", "/metrics": "ratelimit_requests_total"} {
				res, err := http.Get("http://" + httpAddr + path)
				require.NoError(t, err)
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				assert.Equal(t, http.StatusOK, res.StatusCode, path)
				assert.Contains(t, string(b), want, path)
			}
		})
	}
}

func headerKeys(r *pb.RateLimitResponse) []string {
	var keys []string
	for _, h := range r.GetResponseHeadersToAdd() {
		keys = append(keys, h.GetKey())
	}
	return keys
}

func TestBadCommandLines(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-config", "missing.yaml"},
		{"-config", exampleConfig, "-header-style", "fancy"},
		{"-config", exampleConfig, "-failure-mode", "maybe"},
		{"-config", exampleConfig, "-instances", "0"},
		{"-config", exampleConfig, "extra"},
		{"-config", exampleConfig, "-grpc-addr", "256.0.0.1:1"},
		{"-config", exampleConfig, "-xds", "127.0.0.1:18000"},
	} {
		err := run(context.Background(), args, io.Discard, nil)
		assert.Error(t, err, "%q", args)
	}
}

func TestMain(m *testing.M) { redistest.Main(m) }
