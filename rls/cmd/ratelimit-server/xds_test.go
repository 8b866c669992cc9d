package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	xdsserver "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	rlsconf "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
)

// lineSignal is a log writer that tells of every line holding a phrase, and keeps them all.
type lineSignal struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	all    strings.Builder
	phrase string
	seen   chan struct{}
}

// text returns everything written so far.
func (l *lineSignal) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.all.String()
}

func (l *lineSignal) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all.Write(p)
	l.buf.Write(p)
	for {
		line, err := l.buf.ReadString('\n')
		if err != nil { // a part of a line: kept for the next write
			l.buf.Reset()
			l.buf.WriteString(line)
			return len(p), nil
		}
		if strings.Contains(line, l.phrase) {
			l.seen <- struct{}{}
		}
	}
}

// TestXDSFlag starts the command with -xds on go-control-plane's management server: the
// pushed snapshot, once the command logs it loaded, answers a /json call over its limit
// with OVER_LIMIT.
func TestXDSFlag(t *testing.T) {
	addr, snapshots := serveXDS(t)
	httpAddr, logs := runXDS(t, "xds configuration loaded", "-xds", addr, "-xds-node", "edge-rls")
	pushEdge(t, snapshots)
	<-logs.seen
	requireOverLimit(t, httpAddr)
}

// serveXDS starts go-control-plane's management server with opts, and returns its address
// and its snapshots.
func serveXDS(t *testing.T, opts ...grpc.ServerOption) (string, cache.SnapshotCache) {
	t.Helper()
	snapshots := cache.NewSnapshotCache(false, cache.IDHash{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	gs := grpc.NewServer(opts...)
	discovery.RegisterAggregatedDiscoveryServiceServer(gs, xdsserver.NewServer(ctx, snapshots, nil))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(func() { gs.Stop(); cancel() })
	return ln.Addr().String(), snapshots
}

// runXDS runs the command with args on loopback ports, and returns its HTTP address and
// its log, which signals each line holding phrase. The test's cleanup stops the command and
// checks it stopped cleanly.
func runXDS(t *testing.T, phrase string, args ...string) (string, *lineSignal) {
	t.Helper()
	logs := &lineSignal{phrase: phrase, seen: make(chan struct{}, 64)}
	runCtx, stop := context.WithCancel(context.Background())
	addrs, done := make(chan string, 1), make(chan error, 1)
	go func() {
		done <- run(runCtx, append([]string{"-grpc-addr", "127.0.0.1:0", "-http-addr", "127.0.0.1:0"}, args...), logs,
			func(_, h string) { addrs <- h })
	}()
	select {
	case httpAddr := <-addrs:
		t.Cleanup(func() { stop(); require.NoError(t, <-done) })
		return httpAddr, logs
	case err := <-done:
		stop()
		t.Fatalf("the server did not start: %v", err)
	}
	return "", nil
}

// pushEdge pushes the domain edge, 5 a minute per remote_address, to the node edge-rls.
func pushEdge(t *testing.T, snapshots cache.SnapshotCache) {
	t.Helper()
	rc := &rlsconf.RateLimitConfig{Name: "edge", Domain: "edge", Descriptors: []*rlsconf.RateLimitDescriptor{{
		Key: "remote_address", RateLimit: &rlsconf.RateLimitPolicy{Unit: rlsconf.RateLimitUnit_MINUTE, RequestsPerUnit: 5},
	}}}
	snap, err := cache.NewSnapshot("1", map[resource.Type][]types.Resource{resource.RateLimitConfigType: {rc}})
	require.NoError(t, err)
	require.NoError(t, snapshots.SetSnapshot(context.Background(), "edge-rls", snap))
}

// requireOverLimit requires a /json call for 6 hits of the domain edge to answer OVER_LIMIT.
func requireOverLimit(t *testing.T, httpAddr string) {
	t.Helper()
	body := `{"domain":"edge","descriptors":[{"entries":[{"key":"remote_address","value":"10.0.0.1"}]}],"hitsAddend":6}`
	res, err := http.Post("http://"+httpAddr+"/json", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	out, _ := io.ReadAll(res.Body)
	res.Body.Close()
	assert.Equal(t, http.StatusTooManyRequests, res.StatusCode)
	assert.Contains(t, string(out), `"overallCode":"OVER_LIMIT"`)
}
