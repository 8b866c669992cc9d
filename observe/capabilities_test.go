package observe

import (
	"context"
	"reflect"
	"testing"
	"time"

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

func (s *stub) Hold(context.Context, string, ratelimit.Limit, int, time.Duration) (ratelimit.Result, error) {
	s.called("Hold")
	return ratelimit.Result{Allowed: true}, nil
}

func (s *stub) Settle(context.Context, string, ratelimit.Limit, ratelimit.Charge, int, int) (ratelimit.Result, error) {
	s.called("Settle")
	return ratelimit.Result{Allowed: true}, nil
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

func (s *stub) BackendName() string { return "stub" }

// partial is the stub with only the capabilities of has, given through As the way a
// wrapper gives what its parts have; it has no Unwrap, so it lends nothing more.
type partial struct {
	*base
	has map[reflect.Type]bool
}

// base is the stub's ratelimit.Limiter and BackendNamer, without its capabilities.
type base struct{ s *stub }

func (b *base) Allow(ctx context.Context, key string, limit ratelimit.Limit) (ratelimit.Result, error) {
	return b.s.Allow(ctx, key, limit)
}

func (b *base) AllowN(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, error) {
	return b.s.AllowN(ctx, key, limit, n)
}

func (b *base) Wait(ctx context.Context, key string, limit ratelimit.Limit) error {
	return b.s.Wait(ctx, key, limit)
}

func (b *base) Close() error        { return b.s.Close() }
func (b *base) BackendName() string { return "stub" }

func (p partial) As(target any) bool {
	v := reflect.ValueOf(target).Elem()
	if !p.has[v.Type()] {
		return false
	}
	v.Set(reflect.ValueOf(p.s))
	return true
}

// count is an Observer that counts the decisions it is told of.
type count struct{ n int }

func (c *count) ObserveDecision(context.Context, Decision) { c.n++ }

// capabilityRow is one optional interface of a Limiter: adding a capability to the kit is
// one row of capabilityTable.
type capabilityRow struct {
	typ reflect.Type
	has func(ratelimit.Limiter) bool
	// use calls the capability of w, which wraps a stub, and returns the stub's method it
	// must reach and how many decisions it must report; origins says the stub reports
	// origins too.
	use func(t *testing.T, w ratelimit.Limiter, origins bool) (reached string, reports int)
}

func has[T any](l ratelimit.Limiter) bool {
	_, ok := ratelimit.As[T](l)
	return ok
}

func row[T any](use func(t *testing.T, c T, origins bool) (string, int)) capabilityRow {
	return capabilityRow{typ: reflect.TypeFor[T](), has: has[T], use: func(t *testing.T, w ratelimit.Limiter, origins bool) (string, int) {
		c, ok := ratelimit.As[T](w)
		require.True(t, ok)
		return use(t, c, origins)
	}}
}

var (
	ctx   = context.Background()
	limit = ratelimit.PerSecond(1)
	reqs  = []ratelimit.Request{{Key: "a", Limit: limit}, {Key: "b", Limit: limit}}
)

var capabilityTable = []capabilityRow{
	row(func(t *testing.T, m ratelimit.MultiLimiter, origins bool) (string, int) {
		_, err := m.AllowAll(ctx, reqs)
		require.NoError(t, err)
		if origins {
			return "AllowAllOrigin", 2
		}
		return "AllowAll", 2 // one report per limit
	}),
	row(func(t *testing.T, ins ratelimit.Inspector, _ bool) (string, int) {
		_, err := ins.Refund(ctx, "k", limit, 1, ratelimit.Charge{})
		require.NoError(t, err)
		return "Refund", 0 // inspection decides nothing
	}),
	row(func(t *testing.T, v ratelimit.LimitValidator, _ bool) (string, int) {
		require.NoError(t, v.ValidateLimit(limit))
		return "ValidateLimit", 0
	}),
	row(func(t *testing.T, h ratelimit.Settler, _ bool) (string, int) {
		_, err := h.Hold(ctx, "k", limit, 1, time.Second)
		require.NoError(t, err)
		return "Hold", 1 // a hold decides
	}),
	row(func(t *testing.T, o OriginReporter, _ bool) (string, int) {
		_, org, err := o.AllowNOrigin(ctx, "k", limit, 1)
		require.NoError(t, err)
		assert.Equal(t, Origin{Backend: "part"}, org)
		return "AllowNOrigin", 1
	}),
}

// TestCapabilities runs every subset of the capability table: a stub with exactly that
// subset, observed by Wrap, has exactly that subset through ratelimit.As, each capability
// reaches the stub, reported or not as it decides or not, and Wait is not observed.
func TestCapabilities(t *testing.T) {
	for set := range 1 << len(capabilityTable) {
		s := &stub{calls: map[string]int{}}
		inner := partial{base: &base{s}, has: map[reflect.Type]bool{}}
		name := "Limiter"
		for i, c := range capabilityTable {
			if set&(1<<i) != 0 {
				inner.has[c.typ] = true
				name += "+" + c.typ.Name()
			}
		}
		origins := inner.has[reflect.TypeFor[OriginReporter]()]
		t.Run(name, func(t *testing.T) {
			obs := &count{}
			w := Wrap(inner, obs, "p")
			assert.Equal(t, "stub", BackendName(w))
			assert.Equal(t, ratelimit.Limiter(inner), w.(interface{ Unwrap() ratelimit.Limiter }).Unwrap())
			for _, c := range capabilityTable {
				require.Equal(t, inner.has[c.typ], c.has(inner), "%s: the stub", c.typ.Name())
				require.Equal(t, inner.has[c.typ], c.has(w), "%s: observed", c.typ.Name())
			}

			// An origin reporter is asked for the origin, and the others for the decision.
			decided := "AllowN"
			if origins {
				decided = "AllowNOrigin"
			}
			_, err := w.Allow(ctx, "k", limit)
			require.NoError(t, err)
			assert.Equal(t, 1, s.calls[decided])
			assert.Equal(t, 1, obs.n)
			require.NoError(t, w.Wait(ctx, "k", limit))
			assert.Equal(t, 1, s.calls["Wait"])
			assert.Equal(t, 1, obs.n, "Wait is not observed")

			for _, c := range capabilityTable {
				if !inner.has[c.typ] {
					continue
				}
				before, reported := s.calls, obs.n
				s.calls = map[string]int{}
				reached, reports := c.use(t, w, origins)
				assert.Equal(t, map[string]int{reached: 1}, s.calls, c.typ.Name())
				assert.Equal(t, reported+reports, obs.n, c.typ.Name())
				s.calls = before
			}
			require.NoError(t, w.Close())
			assert.Equal(t, 1, s.calls["Close"])
		})
	}
}

// An observed origin reporter that decides no several limits answers AllowAllOrigin with
// ratelimit.ErrNotSupported, as OriginReporter says, without asking it.
func TestObservedOriginsWithoutMulti(t *testing.T) {
	s := &stub{calls: map[string]int{}}
	inner := partial{base: &base{s}, has: map[reflect.Type]bool{reflect.TypeFor[OriginReporter](): true}}
	o, ok := ratelimit.As[OriginReporter](Wrap(inner, &count{}, "p"))
	require.True(t, ok)
	_, _, err := o.AllowAllOrigin(ctx, reqs)
	require.ErrorIs(t, err, ratelimit.ErrNotSupported)
	assert.Empty(t, s.calls)
}
