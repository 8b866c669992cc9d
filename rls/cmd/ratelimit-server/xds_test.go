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

// lineSignal is a log writer that tells of every line holding a phrase.
type lineSignal struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	phrase string
	seen   chan struct{}
}

func (l *lineSignal) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
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
	snapshots := cache.NewSnapshotCache(false, cache.IDHash{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gs := grpc.NewServer()
	discovery.RegisterAggregatedDiscoveryServiceServer(gs, xdsserver.NewServer(ctx, snapshots, nil))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = gs.Serve(ln) }()
	defer gs.Stop()

	logs := &lineSignal{phrase: "xds configuration loaded", seen: make(chan struct{}, 4)}
	runCtx, stop := context.WithCancel(context.Background())
	addrs, done := make(chan string, 1), make(chan error, 1)
	go func() {
		done <- run(runCtx, []string{"-grpc-addr", "127.0.0.1:0", "-http-addr", "127.0.0.1:0",
			"-xds", ln.Addr().String(), "-xds-node", "edge-rls"}, logs,
			func(_, h string) { addrs <- h })
	}()
	var httpAddr string
	select {
	case httpAddr = <-addrs:
	case err := <-done:
		t.Fatalf("the server did not start: %v", err)
	}
	defer func() { stop(); require.NoError(t, <-done) }()

	rc := &rlsconf.RateLimitConfig{Name: "edge", Domain: "edge", Descriptors: []*rlsconf.RateLimitDescriptor{{
		Key: "remote_address", RateLimit: &rlsconf.RateLimitPolicy{Unit: rlsconf.RateLimitUnit_MINUTE, RequestsPerUnit: 5},
	}}}
	snap, err := cache.NewSnapshot("1", map[resource.Type][]types.Resource{resource.RateLimitConfigType: {rc}})
	require.NoError(t, err)
	require.NoError(t, snapshots.SetSnapshot(context.Background(), "edge-rls", snap))
	<-logs.seen

	body := `{"domain":"edge","descriptors":[{"entries":[{"key":"remote_address","value":"10.0.0.1"}]}],"hitsAddend":6}`
	res, err := http.Post("http://"+httpAddr+"/json", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	out, _ := io.ReadAll(res.Body)
	res.Body.Close()
	assert.Equal(t, http.StatusTooManyRequests, res.StatusCode)
	assert.Contains(t, string(out), `"overallCode":"OVER_LIMIT"`)
}
