package grpcmw_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/grpcmw"
)

// A stream is settled when it ends: 10 a minute, the first stream, charged 1 when it opened,
// reports that it cost 9 at its end, leaving 1; the second passes, taking it; the third is
// denied. (Without the settle, eight more would pass.)
func TestStreamSettledAtEnd(t *testing.T) {
	l, _ := newLimiter(t)
	var streams atomic.Int64
	e := newEnv(t, server{stream: grpcmw.StreamServerInterceptor(l, grpcmw.WithLimit(ratelimit.PerMinute(10)),
		grpcmw.WithSettle(func(_ context.Context, _ string, err error) (int, bool) {
			return 9, err == nil && streams.Add(1) == 1
		}))})
	replies, _, err := e.streamCall(ctx(t), "SA", 2)
	require.NoError(t, err)
	assert.Equal(t, 2, replies)
	_, _, err = e.streamCall(ctx(t), "SA", 1)
	require.NoError(t, err)
	_, _, err = e.streamCall(ctx(t), "SA", 1)
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
}

// WithPerMessage charges no one decision to settle: the interceptor refuses both.
func TestPerMessageSettleConflict(t *testing.T) {
	l, _ := newLimiter(t)
	assert.Panics(t, func() {
		grpcmw.StreamServerInterceptor(l, grpcmw.WithLimit(ratelimit.PerMinute(10)), grpcmw.WithPerMessage(),
			grpcmw.WithSettle(func(context.Context, string, error) (int, bool) { return 1, true }))
	})
}
