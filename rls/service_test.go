package rls

import (
	"context"
	"strings"
	"testing"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit/headers"
)

// TestScenariosLocal plays the conformance scenarios on the in-memory backend, calling the
// service directly.
func TestScenariosLocal(t *testing.T) {
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			clock := newClock()
			s, err := New(newLocal(t, clock), load(t, sc.config), append([]Option{WithClock(clock.Now), WithoutHeaders()}, sc.opts...)...)
			require.NoError(t, err)
			for _, d := range sc.run(context.Background(), s, clock, s.ShouldRateLimit) {
				t.Error(d)
			}
		})
	}
}

func TestHeaders(t *testing.T) {
	cases := []struct {
		name  string
		opts  []Option
		calls int // calls of user=u before the one looked at
		want  map[string]string
	}{
		{"IETF, the default", nil, 0, map[string]string{
			"RateLimit-Policy": `"api.user";q=20;w=60`, "RateLimit": `"api.user";r=19;t=50`}},
		{"IETF on a denial", nil, 20, map[string]string{
			"Retry-After": "50", "RateLimit-Policy": `"api.user";q=20;w=60`, "RateLimit": `"api.user";r=0;t=50`}},
		{"X-RateLimit, as the reference writes them", []Option{WithHeaderStyle(headers.StyleXRateLimit)}, 1,
			map[string]string{"X-RateLimit-Limit": "20", "X-RateLimit-Remaining": "18", "X-RateLimit-Reset": "50"}},
		{"none", []Option{WithoutHeaders()}, 0, map[string]string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := newClock()
			s, err := New(newLocal(t, clock), load(t, apiConfig), append([]Option{WithClock(clock.Now)}, tc.opts...)...)
			require.NoError(t, err)
			ctx := context.Background()
			for range tc.calls {
				_, err := s.ShouldRateLimit(ctx, rq("api", 0, desc("user", "u")))
				require.NoError(t, err)
			}
			r, err := s.ShouldRateLimit(ctx, rq("api", 0, desc("user", "u"), desc("free", "x")))
			require.NoError(t, err)
			got := map[string]string{}
			for _, h := range r.GetResponseHeadersToAdd() {
				got[h.GetKey()] = h.GetValue()
			}
			assert.Equal(t, tc.want, got)
		})
	}
	t.Run("the descriptor that denied, else the nearest its limit", func(t *testing.T) {
		clock := newClock()
		s, err := New(newLocal(t, clock), load(t, apiConfig), WithClock(clock.Now), WithHeaderStyle(headers.StyleXRateLimit))
		require.NoError(t, err)
		ctx := context.Background()
		r, err := s.ShouldRateLimit(ctx, rq("api", 0, desc("user", "v"), desc("org", "o")))
		require.NoError(t, err)
		assert.Equal(t, "9", remainingHeader(r), "org, 9 left, is nearer its limit than user, 19")
		r, err = s.ShouldRateLimit(ctx, rq("api", 0, desc("org", "p"), desc("block", "x"), desc("user", "v")))
		require.NoError(t, err)
		assert.Equal(t, "0", remainingHeader(r))
		assert.Equal(t, "1", headerOf(r, "Retry-After"), "block's window is a second")
	})
	assert.Panics(t, func() {
		_, _ = New(newLocal(t, newClock()), nil, WithHeaderStyle(headers.StyleIETF), WithoutHeaders())
	})
}

func headerOf(r *pb.RateLimitResponse, name string) string {
	for _, h := range r.GetResponseHeadersToAdd() {
		if strings.EqualFold(h.GetKey(), name) {
			return h.GetValue()
		}
	}
	return ""
}

func remainingHeader(r *pb.RateLimitResponse) string { return headerOf(r, "X-RateLimit-Remaining") }

func TestConfigRefusedByTheLimiter(t *testing.T) {
	c, err := Parse(File{Name: "big.yaml", Data: []byte(
		"domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 20000, algorithm: sliding-log}")})
	require.NoError(t, err, "Limit.Validate accepts it; the backend does not")
	_, err = New(newLocal(t, newClock()), c)
	require.ErrorIs(t, err, ErrAlgorithm)

	s, err := New(newLocal(t, newClock()), load(t, apiConfig))
	require.NoError(t, err)
	require.ErrorIs(t, s.SetConfig(c), ErrConfig)
	assert.Equal(t, []string{"api"}, s.Config().Domains(), "a refused configuration changes nothing")
	require.NoError(t, s.SetConfig(nil))
	assert.Empty(t, s.Config().Domains())
}
