package rls

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-go/ratelimit/distributed"
)

// deadRedis returns a Redis limiter whose server is gone: a loopback port nothing listens
// on, so that every call fails at once with "connection refused".
func deadRedis(t *testing.T) *distributed.Limiter {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	client := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second,
		ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	l, err := distributed.New(client, distributed.WithTimeout(2*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func TestFailureModes(t *testing.T) {
	req := rq("api", 0, desc("user", "u"), desc("free", "x"), desc("nope", "x"))
	cases := []struct {
		mode FailureMode
		want *struct{ code, user string }
		err  codes.Code
	}{
		{mode: FailOpen, want: &struct{ code, user string }{"OK", "OK"}},
		{mode: FailClosed, want: &struct{ code, user string }{"OVER_LIMIT", "OVER_LIMIT"}},
		{mode: FailError, err: codes.Unavailable},
	}
	for _, tc := range cases {
		t.Run(tc.mode.String(), func(t *testing.T) {
			clock := newClock()
			s, err := New(deadRedis(t), load(t, apiConfig), WithClock(clock.Now), WithFailureMode(tc.mode), WithoutHeaders())
			require.NoError(t, err)
			r, err := s.ShouldRateLimit(context.Background(), req)
			if tc.err != codes.OK {
				require.Equal(t, tc.err, status.Code(err), "%v", err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want.code, r.GetOverallCode().String())
			assert.Equal(t, tc.want.user, r.GetStatuses()[0].GetCode().String())
			assert.EqualValues(t, 0, r.GetStatuses()[0].GetLimitRemaining())
			assert.EqualValues(t, 20, r.GetStatuses()[0].GetCurrentLimit().GetRequestsPerUnit())
			assert.Equal(t, "OK", r.GetStatuses()[1].GetCode().String(), "unlimited needs no limiter")
			assert.Equal(t, "OK", r.GetStatuses()[2].GetCode().String(), "no limit needs no limiter")
		})
	}
	t.Run("a caller that gave up", func(t *testing.T) {
		s, err := New(deadRedis(t), load(t, apiConfig), WithFailureMode(FailClosed))
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = s.ShouldRateLimit(ctx, req)
		assert.Equal(t, codes.Canceled, status.Code(err), "%v", err)
	})
}
