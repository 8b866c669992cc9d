package observe

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
)

// stub is a Limiter with every capability, which counts the calls each method gets.
type stub struct{ calls map[string]int }

func (s *stub) called(name string) { s.calls[name]++ }

func (s *stub) Allow(ctx context.Context, key string, limit ratelimit.Limit) (ratelimit.Result, error) {
	return s.AllowN(ctx, key, limit, 1)
}

func (s *stub) AllowN(context.Context, string, ratelimit.Limit, int) (ratelimit.Result, error) {
	s.called("AllowN")
	return ratelimit.Result{Allowed: true}, nil
}

func (s *stub) AllowAll(_ context.Context, reqs []ratelimit.Request) (ratelimit.MultiResult, error) {
	s.called("AllowAll")
	return ratelimit.MultiResult{Allowed: true, Results: make([]ratelimit.Result, len(reqs))}, nil
}

func (s *stub) AllowNOrigin(context.Context, string, ratelimit.Limit, int) (ratelimit.Result, Origin, error) {
	s.called("AllowNOrigin")
	return ratelimit.Result{Allowed: true}, Origin{Backend: "part"}, nil
}

func (s *stub) AllowAllOrigin(_ context.Context, reqs []ratelimit.Request) (ratelimit.MultiResult, Origin, error) {
	s.called("AllowAllOrigin")
	return ratelimit.MultiResult{Allowed: true, Results: make([]ratelimit.Result, len(reqs))}, Origin{Backend: "part"}, nil
}

func (s *stub) Peek(context.Context, string, ratelimit.Limit, int) (ratelimit.Result, error) {
	s.called("Peek")
	return ratelimit.Result{}, nil
}

func (s *stub) Refund(context.Context, string, ratelimit.Limit, int, ratelimit.Charge) (ratelimit.Result, error) {
	s.called("Refund")
	return ratelimit.Result{}, nil
}

func (s *stub) Reset(context.Context, string, ratelimit.Limit) error {
	s.called("Reset")
	return nil
}

func (s *stub) ValidateLimit(ratelimit.Limit) error {
	s.called("ValidateLimit")
	return nil
}

func (s *stub) Wait(context.Context, string, ratelimit.Limit) error {
	s.called("Wait")
	return nil
}

func (s *stub) Close() error {
	s.called("Close")
	return nil
}

func (s *stub) BackendName() string       { return "stub" }
func (s *stub) Unwrap() ratelimit.Limiter { return nil }

// stubWith returns s as a Limiter with exactly the capabilities caps, made by expose:
// an observed stub, whose reports the test ignores, that asks s for what caps names.
func stubWith(s *stub, caps capability) ratelimit.Limiter {
	o := &observed{limiter: s, obs: Join(&count{}), backend: "stub", clock: NewStopwatch(&count{})}
	if caps&capMulti != 0 {
		o.multi = s
	}
	if caps&capOrigins != 0 {
		o.origins = s
	}
	return expose(o, caps)
}

// count is an Observer that counts the decisions it is told of.
type count struct{ n int }

func (c *count) ObserveDecision(context.Context, Decision) { c.n++ }

// TestCapabilities enumerates every subset of the capabilities a wrapper forwards: a stub
// with exactly that subset (made by expose, which the first check tests), observed by Wrap,
// has exactly that subset too, and each method of it reaches the stub, the decisions
// reported and the rest not.
func TestCapabilities(t *testing.T) {
	names := map[capability]string{
		capMulti: "MultiLimiter", capInspector: "Inspector", capValidator: "LimitValidator", capOrigins: "OriginReporter",
	}
	ctx := context.Background()
	limit := ratelimit.PerSecond(1)
	reqs := []ratelimit.Request{{Key: "a", Limit: limit}, {Key: "b", Limit: limit}}
	for caps := capability(0); caps < 16; caps++ {
		name := "Limiter"
		for c := capMulti; c <= capOrigins; c <<= 1 {
			if caps&c != 0 {
				name += "+" + names[c]
			}
		}
		t.Run(name, func(t *testing.T) {
			s := &stub{calls: map[string]int{}}
			inner := stubWith(s, caps)
			require.Equal(t, caps, capabilitiesOf(inner), "expose")

			obs := &count{}
			w := Wrap(inner, obs, "p")
			require.Equal(t, caps, capabilitiesOf(w), "Wrap")
			assert.Equal(t, "stub", BackendName(w))
			assert.Equal(t, inner, w.(interface{ Unwrap() ratelimit.Limiter }).Unwrap())

			// An origin reporter is asked for the origin, and the others for the decision.
			decided := "AllowN"
			if caps&capOrigins != 0 {
				decided = "AllowNOrigin"
			}
			_, err := w.Allow(ctx, "k", limit)
			require.NoError(t, err)
			assert.Equal(t, 1, s.calls[decided])
			assert.Equal(t, 1, obs.n)
			require.NoError(t, w.Wait(ctx, "k", limit))
			assert.Equal(t, 1, s.calls["Wait"])
			assert.Equal(t, 1, obs.n, "Wait is not observed")

			if m, ok := w.(ratelimit.MultiLimiter); ok {
				decided := "AllowAll"
				if caps&capOrigins != 0 {
					decided = "AllowAllOrigin"
				}
				_, err := m.AllowAll(ctx, reqs)
				require.NoError(t, err)
				assert.Equal(t, 1, s.calls[decided])
				assert.Equal(t, 3, obs.n, "one report per limit")
			}
			if o, ok := w.(OriginReporter); ok {
				_, org, err := o.AllowNOrigin(ctx, "k", limit, 1)
				require.NoError(t, err)
				assert.Equal(t, Origin{Backend: "part"}, org)
			}
			if ins, ok := w.(ratelimit.Inspector); ok {
				reported := obs.n
				_, err := ins.Peek(ctx, "k", limit, 1)
				require.NoError(t, err)
				_, err = ins.Refund(ctx, "k", limit, 1, ratelimit.Charge{})
				require.NoError(t, err)
				require.NoError(t, ins.Reset(ctx, "k", limit))
				assert.Equal(t, 1, s.calls["Peek"])
				assert.Equal(t, 1, s.calls["Refund"])
				assert.Equal(t, 1, s.calls["Reset"])
				assert.Equal(t, reported, obs.n, "inspection is not observed")
			}
			if v, ok := w.(ratelimit.LimitValidator); ok {
				require.NoError(t, v.ValidateLimit(limit))
				assert.Equal(t, 1, s.calls["ValidateLimit"])
			}
			require.NoError(t, w.Close())
			assert.Equal(t, 1, s.calls["Close"])
		})
	}
}

// The methods of a capability the wrapped limiter lacks, hidden by expose, still answer
// sensibly when called on the wrapper itself.
func TestObservedWithout(t *testing.T) {
	s := &stub{calls: map[string]int{}}
	w := Wrap(stubWith(s, 0), &count{}, "p").(basePart).f
	ctx := context.Background()
	limit := ratelimit.PerSecond(1)
	_, err := w.AllowAll(ctx, []ratelimit.Request{{Key: "k", Limit: limit}})
	require.ErrorIs(t, err, ratelimit.ErrNotSupported)
	_, err = w.Peek(ctx, "k", limit, 1)
	require.ErrorIs(t, err, ratelimit.ErrNotSupported)
	require.ErrorIs(t, w.ValidateLimit(ratelimit.Limit{}), ratelimit.ErrInvalidLimit)
	assert.Empty(t, s.calls)
}
