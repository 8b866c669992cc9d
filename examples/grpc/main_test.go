package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/local"
)

// serve starts newServer(limiter) on a loopback port and returns its address.
func serve(t *testing.T, limiter ratelimit.Limiter) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := newServer(limiter)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
	})
	return lis.Addr().String()
}

// client runs the example's client for n calls and returns what it printed.
func client(t *testing.T, addr string, n int) string {
	t.Helper()
	self := local.New(local.WithCleanupInterval(-1))
	defer self.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, runClient(ctx, addr, self, n, &out))
	return out.String()
}

// PerMinute(5) gives back a token every 12 s; the server's clock stands still, so the
// values are exact. The client's own limit, 10 a second with a burst of 10, never has it wait
// for 7 calls.
func TestClientAndServer(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := local.New(local.WithClock(func() time.Time { return now }), local.WithCleanupInterval(-1))
	defer l.Close()
	assert.Equal(t, `call 1: SERVING, 4 calls left
call 2: SERVING, 3 calls left
call 3: SERVING, 2 calls left
call 4: SERVING, 1 calls left
call 5: SERVING, 0 calls left
call 6: ResourceExhausted: rate limit exceeded; retry in 12s (pushback 12000 ms)
call 7: ResourceExhausted: rate limit exceeded; retry in 12s (pushback 12000 ms)
`, client(t, serve(t, l), 7))
}

func TestRedisBackend(t *testing.T) {
	server := redistest.NewServer(t)
	l, closeLimiter, err := newLimiter(server.Addr())
	require.NoError(t, err)
	defer closeLimiter()
	lines := strings.Split(strings.TrimSpace(client(t, serve(t, l), 6)), "\n")
	require.Len(t, lines, 6)
	assert.Equal(t, "call 5: SERVING, 0 calls left", lines[4])
	// Redis's clock runs: the delay is a little under 12 s, rounded up to the millisecond.
	assert.True(t, strings.HasPrefix(lines[5], "call 6: ResourceExhausted: rate limit exceeded; retry in 1"), lines[5])
	keys, err := server.Do("KEYS", "grpc-example:*")
	require.NoError(t, err)
	assert.Len(t, keys, 1, "one bucket, under the example's prefix")
}
