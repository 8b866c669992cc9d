package distributed_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// scenarioStep is one call of a reserve-then-settle scenario, at an instant after the
// clock's start: a hold of n tokens (on the local backend, which holds nothing in flight, an
// AllowN), a settle of the hold made at step of to actual tokens (of < 0: of the zero Charge,
// nothing reserved), each answering allowed and remaining (a settle: Peek's for one token
// after it) or the error wrapping err. redisOnly marks a step of a hold's expiry, which only
// the Redis backend has.
type scenarioStep struct {
	at        time.Duration
	op        string // "hold" or "settle"
	key       string
	n         int // hold: the tokens; settle: actual
	of        int
	allowed   bool
	remaining int
	err       error
	redisOnly bool
}

// playScenario plays steps on limit on both backends, holds on Redis lasting ttl.
func playScenario(t *testing.T, limit ratelimit.Limit, ttl time.Duration, steps []scenarioStep) {
	server := redistest.NewServer(t)
	backends := []struct {
		name string
		new  func(clock *ratelimittest.Clock) ratelimit.Limiter
	}{
		{"local", func(clock *ratelimittest.Clock) ratelimit.Limiter {
			l := local.New(local.WithClock(clock.Now), local.WithCleanupInterval(-1))
			t.Cleanup(func() { _ = l.Close() })
			return l
		}},
		{"redis", func(clock *ratelimittest.Clock) ratelimit.Limiter {
			return newLimiter(t, newClient(t, server.Addr()), clock)
		}},
	}
	ctx := context.Background()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			clock := ratelimittest.NewClock()
			start := clock.Now()
			l := b.new(clock)
			s, ok := ratelimit.As[ratelimit.Settler](l)
			require.True(t, ok)
			held := make(map[int]ratelimit.Result)
			for i, st := range steps {
				if st.redisOnly && b.name != "redis" {
					continue
				}
				clock.Advance(start.Add(st.at).Sub(clock.Now())) // steps in time order
				step := fmt.Sprintf("step %d (%s %d at %v)", i, st.op, st.n, st.at)
				var res ratelimit.Result
				var err error
				switch st.op {
				case "hold":
					if h, ok := ratelimit.As[ratelimit.Settler](l); ok {
						res, err = h.Hold(ctx, st.key, limit, st.n, ttl)
					} else {
						res, err = l.AllowN(ctx, st.key, limit, st.n)
					}
					held[i] = res
				case "settle":
					var c ratelimit.Charge
					reserved := 0
					if st.of >= 0 {
						c, reserved = held[st.of].Charge, steps[st.of].n
					}
					res, err = s.Settle(ctx, st.key, limit, c, reserved, st.n)
				}
				if st.err != nil {
					require.ErrorIs(t, err, st.err, step)
					continue
				}
				require.NoError(t, err, step)
				require.Equal(t, st.allowed, res.Allowed, step)
				require.Equal(t, st.remaining, res.Remaining, step)
			}
		})
	}
}

// TestScenarioReserveCommit: a reservation and commit sequence on a limit of 10 requests in
// a 60 s window (a fixed window), after Limitador's Reserve/Commit (Kuadrant/limitador#515),
// in our own steps. Admission counts what the window holds, the holds in flight and the
// request (usage + holds + requested ≤ 10); a commit settles a hold to its actual cost.
// Holds last 10 s on Redis. Where the semantics part:
//   - Limitador commits an overrun whole, the counter past its maximum; a window here keeps
//     no debt and refuses it (ErrNotSupported), the hold left as it was.
//   - The local backend holds nothing in flight: its "hold" is an AllowN, which charges the
//     estimate at once, so every step but the expiry answers alike; that step is Redis's.
func TestScenarioReserveCommit(t *testing.T) {
	const s = time.Second
	limit := ratelimit.Limit{Rate: 10.0 / 60, Burst: 10, Algorithm: ratelimit.FixedWindow}
	playScenario(t, limit, 10*s, []scenarioStep{
		0: {at: 0, op: "hold", key: "k", n: 3, allowed: true, remaining: 7},
		1: {at: 0, op: "hold", key: "k", n: 5, allowed: true, remaining: 2},
		// 8 + 3 > 10
		2: {at: 0, op: "hold", key: "k", n: 3, allowed: false, remaining: 2},
		// 1 + 5 held
		3: {at: 1 * s, op: "settle", key: "k", of: 0, n: 1, allowed: true, remaining: 3},
		4: {at: 1 * s, op: "hold", key: "k", n: 3, allowed: true, remaining: 1},
		// 6 + 3 held
		5: {at: 2 * s, op: "settle", key: "k", of: 1, n: 5, allowed: true, remaining: 0},
		6: {at: 2 * s, op: "hold", key: "k", n: 2, allowed: false, remaining: 1},
		7: {at: 2 * s, op: "settle", key: "k", of: 4, n: 4, err: ratelimit.ErrNotSupported},
		// Step 4's hold expires at 11 s, given back by the next hold: 6 + 4 fit.
		8: {at: 11 * s, op: "hold", key: "k", n: 4, allowed: true, remaining: 0, redisOnly: true},
		// A new window: all 10 again; the late commit of step 4's hold (given back on Redis,
		// charged in the window before locally) changes nothing.
		9:  {at: 60 * s, op: "hold", key: "k", n: 10, allowed: true, remaining: 0},
		10: {at: 60 * s, op: "settle", key: "k", of: 4, n: 0, allowed: false, remaining: 0},
	})
}

// TestScenarioReserveSettle: reserve-then-settle on a quota of 100 tokens that does not
// refill (a token bucket of a token an hour, the clock still), after teleport's in-memory
// LLM token limiter (gravitational/teleport#69116), its properties as exact steps in our
// own table. Settled exactly, a reservation is the consumption; consumed less gives back,
// consumed more charges the overrun; a cost nobody could estimate is reserved as nothing and
// settled whole; reservations and settles both count, up to the limit, past which every
// reservation fails while settles still work; keys are apart; a reservation past the limit,
// or an overrun past the debt bound, cannot slip through. Where the semantics part: teleport
// takes an empty settlement as "usage unknown" and keeps the reservation; here actual 0 means
// nothing was spent, and gives the whole reservation back (the middlewares' settle function
// keeps it by answering ok false).
func TestScenarioReserveSettle(t *testing.T) {
	limit := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 100}
	playScenario(t, limit, time.Minute, []scenarioStep{
		0: {op: "hold", key: "app", n: 40, allowed: true, remaining: 60},
		// exact
		1: {op: "settle", key: "app", of: 0, n: 40, allowed: true, remaining: 59},
		2: {op: "hold", key: "app", n: 30, allowed: true, remaining: 30},
		// less: 50 spent
		3: {op: "settle", key: "app", of: 2, n: 10, allowed: true, remaining: 49},
		4: {op: "hold", key: "app", n: 10, allowed: true, remaining: 40},
		// more: 75
		5: {op: "settle", key: "app", of: 4, n: 25, allowed: true, remaining: 24},
		// unestimated: 80
		6: {op: "settle", key: "app", of: -1, n: 5, allowed: true, remaining: 19},
		7: {op: "hold", key: "app", n: 20, allowed: true, remaining: 0},
		8: {op: "hold", key: "app", n: 1, allowed: false, remaining: 0},
		// still settles
		9: {op: "settle", key: "app", of: 7, n: 20, allowed: false, remaining: 0},
		// keys apart
		10: {op: "hold", key: "other", n: 100, allowed: true, remaining: 0},
		11: {op: "hold", key: "other", n: 101, err: ratelimit.ErrExceedsBurst},
		12: {op: "settle", key: "other", of: 10, n: 100 + 201, err: ratelimit.ErrExceedsBurst},
		// all back
		13: {op: "settle", key: "other", of: 10, n: 0, allowed: true, remaining: 99},
	})
}
