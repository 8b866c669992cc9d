package grpcmw_test

import (
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/grpcmw"
	"github.com/sluice-go/ratelimit/local"
)

// TestLeakyBucketSpacesCalls: a real leaky bucket (10/s, a queue of 3) behind the unary
// server interceptor, end to end over bufconn on synctest's clock. Five calls at once:
// three are held and reach the handler 100 ms apart; two find the queue full and end at
// once with ResourceExhausted.
func TestLeakyBucketSpacesCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := local.New(local.WithAlgorithm(ratelimit.LeakyBucket))
		defer l.Close()
		e := newEnv(t, server{unary: grpcmw.UnaryServerInterceptor(l, grpcmw.WithLimit(ratelimit.Limit{Rate: 10, Burst: 3}))})
		c := ctx(t)
		// Connect first, so that every call starts at the same instant. Calls are limited
		// per method: B's queue is not A's.
		_, err := e.unaryCall(c, "B")
		require.NoError(t, err)
		start := time.Now()
		var mu sync.Mutex
		ended := map[codes.Code][]time.Duration{}
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() {
				_, err := e.unaryCall(c, "A")
				mu.Lock()
				ended[status.Code(err)] = append(ended[status.Code(err)], time.Since(start))
				mu.Unlock()
			})
		}
		wg.Wait()
		ms := time.Millisecond
		assert.Equal(t, []time.Duration{0, 100 * ms, 200 * ms}, slices.Sorted(slices.Values(ended[codes.OK])))
		assert.Equal(t, []time.Duration{0, 0}, ended[codes.ResourceExhausted])
		assert.Equal(t, int64(1+3), e.handled.Load())
	})
}
