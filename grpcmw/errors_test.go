package grpcmw_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/grpcmw"
	"github.com/sluice-go/ratelimit/keyfuncs/grpckeys"
)

// recorder is an error handler that records what it is told and lets the call go on. The
// server calls it from its own goroutines.
type recorder struct {
	mu   sync.Mutex
	errs []error
}

func (r *recorder) handle(_ context.Context, _ string, err error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, err)
	return nil
}

func (r *recorder) all() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.errs...)
}

// deadRedis returns a Redis limiter whose server is a loopback address nothing listens on
// (bound and released): every decision fails with "connection refused", well within the
// limiter's 50 ms deadline.
func deadRedis(t *testing.T) *distributed.Limiter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	l, err := distributed.New(c, distributed.WithTimeout(50*time.Millisecond))
	require.NoError(t, err)
	return l
}

// A limiter that cannot decide: the calls go through under fail open, and end with
// Unavailable under fail closed, never ResourceExhausted. The error handler hears of each.
func TestErrorPolicy(t *testing.T) {
	limiters := map[string]func(t *testing.T) ratelimit.Limiter{
		"redis down": func(t *testing.T) ratelimit.Limiter { return deadRedis(t) },
		"closed": func(t *testing.T) ratelimit.Limiter {
			l, _ := newLimiter(t)
			require.NoError(t, l.Close())
			return l
		},
	}
	wantErr := map[string]string{"redis down": "grpcmw: distributed: ", "closed": "grpcmw: ratelimit: limiter closed"}
	for name, newL := range limiters {
		for _, k := range kinds {
			for _, closed := range []bool{false, true} {
				t.Run(name+"/"+k.name+"/"+policyNames[closed], func(t *testing.T) {
					var rec recorder
					e := k.env(t, newL(t), withPolicy(closed, grpcmw.WithLimit(ratelimit.PerMinute(1)),
						grpcmw.WithErrorHandler(rec.handle))...)
					for range 3 {
						md, err := k.call(ctx(t), e, "A")
						if !closed {
							assert.NoError(t, err)
						} else {
							assert.Equal(t, codes.Unavailable, status.Code(err))
							assert.Equal(t, "rate limiter unavailable", status.Convert(err).Message())
						}
						assert.Empty(t, md.Get(grpcmw.PushbackKey))
					}
					wantHandled := int64(3)
					if closed {
						wantHandled = 0
					}
					assert.Equal(t, wantHandled, e.handled.Load())
					errs := rec.all()
					require.Len(t, errs, 3)
					for _, err := range errs {
						assert.ErrorContains(t, err, wantErr[name])
					}
				})
			}
		}
	}
}

// Over bufconn the peer has no IP address: PeerIP fails, without a panic, and every such
// call shares the UnkeyedKey bucket.
func TestPeerWithoutIPIsLimitedUnkeyed(t *testing.T) {
	l, _ := newLimiter(t)
	var rec recorder
	e := newEnv(t, server{unary: grpcmw.UnaryServerInterceptor(l, grpcmw.WithLimit(ratelimit.PerMinute(2)),
		grpcmw.WithKeyFunc(grpckeys.PeerIP()), grpcmw.WithErrorHandler(rec.handle))})
	var got []outcome
	for range 3 {
		md, err := e.unaryCall(ctx(t), "A")
		got = append(got, outcomeOf(t, md, err))
	}
	assert.Equal(t, []outcome{allowed, allowed,
		{codes.ResourceExhausted, denial{30 * time.Second, "unkeyed", "rate limit \"default\" (2/min) exceeded"}, "30000"}}, got)
	errs := rec.all()
	require.Len(t, errs, 3)
	assert.ErrorIs(t, errs[0], ratelimit.ErrInvalidArgument)
	assert.EqualError(t, errs[0], `grpcmw: no key, limiting as "unkeyed": ratelimit: empty key: gRPC peer "bufconn" is not an IP address`)
}

// An error handler may end the call itself, with any status.
func TestErrorHandlerCanAnswer(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			l, _ := newLimiter(t)
			e := k.env(t, l, grpcmw.WithLimit(ratelimit.PerMinute(2)), grpcmw.WithKeyFunc(grpckeys.Metadata("x-api-key")),
				grpcmw.WithErrorHandler(func(context.Context, string, error) error {
					return status.Error(codes.Unauthenticated, "missing API key")
				}))
			_, err := k.call(ctx(t), e, "A")
			assert.Equal(t, codes.Unauthenticated, status.Code(err))
			assert.Zero(t, e.handled.Load())
		})
	}
}

// The default error handler logs and lets the call go on; a key function returning "" with
// no error counts as a failure too.
func TestDefaultErrorHandler(t *testing.T) {
	l, _ := newLimiter(t)
	icpt := grpcmw.UnaryServerInterceptor(l, grpcmw.WithLimit(ratelimit.PerMinute(1)),
		grpcmw.WithKeyFunc(func(context.Context, string) (string, error) { return "", nil }), grpcmw.WithErrorHandler(nil))
	var runs int
	_, err := direct(context.Background(), icpt, method, unaryOK(&runs))
	require.NoError(t, err)
	_, err = direct(context.Background(), icpt, method, unaryOK(&runs))
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "limited under UnkeyedKey")
	assert.Equal(t, 1, runs)
}

// policyNames names the answers to a failing limiter in subtests, by whether the middleware
// fails closed.
var policyNames = map[bool]string{false: "FailOpen", true: "FailClosed"}

// withPolicy returns opts, with WithFailClosed when closed.
func withPolicy(closed bool, opts ...grpcmw.Option) []grpcmw.Option {
	if closed {
		return append(opts, grpcmw.WithFailClosed())
	}
	return opts
}
