package fallback_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

const ms = time.Millisecond

// TestDenialCacheTimeline: Rate 1/s, Burst 2 (T = 1 s, τ = 2 s). The third request is
// denied by the primary with RetryAfter 1 s; until then the cache answers with the primary's
// answer aged by the time passed, and at exactly 1 s the primary is asked again and admits.
func TestDenialCacheTimeline(t *testing.T) {
	r := newRig(t)
	limit := ratelimit.Limit{Rate: 1, Burst: 2}
	steps := []struct {
		advance time.Duration
		want    ratelimit.Result
		calls   int64 // calls that reached the primary so far
	}{
		{0, ratelimit.Result{Allowed: true, Remaining: 1, ResetAfter: time.Second}, 1},
		{0, ratelimit.Result{Allowed: true, Remaining: 0, ResetAfter: 2 * time.Second}, 2},
		{0, ratelimit.Result{Remaining: 0, RetryAfter: time.Second, ResetAfter: 2 * time.Second}, 3},
		// From the cache from here on: 250 ms later, 0.25 tokens; RetryAfter and ResetAfter
		// have shrunk by as much.
		{250 * ms, ratelimit.Result{Remaining: 0, RetryAfter: 750 * ms, ResetAfter: 1750 * ms}, 3},
		{0, ratelimit.Result{Remaining: 0, RetryAfter: 750 * ms, ResetAfter: 1750 * ms}, 3},
		{750*ms - time.Nanosecond, ratelimit.Result{Remaining: 0, RetryAfter: time.Nanosecond, ResetAfter: time.Second + time.Nanosecond}, 3},
		// RetryAfter has passed: the primary decides, and admits.
		{time.Nanosecond, ratelimit.Result{Allowed: true, Remaining: 0, ResetAfter: 2 * time.Second}, 4},
		{0, ratelimit.Result{Remaining: 0, RetryAfter: time.Second, ResetAfter: 2 * time.Second}, 5},
	}
	for i, s := range steps {
		r.clock.Advance(s.advance)
		s.want.Limit = limit
		if s.want.Allowed {
			s.want.Charge = ratelimit.Charge{At: r.clock.Now(), Part: "primary"}
		}
		require.Equal(t, s.want, r.allow(t, limit), "step %d", i)
		require.Equal(t, s.calls, r.primary.calls.Load(), "step %d", i)
	}
}

// TestDenialCacheCost: a denial of n tokens is remembered for requests of n tokens, whose
// RetryAfter it knows exactly; requests of other costs go to the primary, which may admit
// them. Another limit on the same key is another bucket, of which the cache knows nothing.
func TestDenialCacheCost(t *testing.T) {
	r := newRig(t)
	limit := ratelimit.Limit{Rate: 1, Burst: 5}
	ctx := context.Background()
	allowN := func(n int) ratelimit.Result {
		t.Helper()
		res, err := r.l.AllowN(ctx, "k", limit, n)
		require.NoError(t, err)
		return res
	}
	require.True(t, allowN(5).Allowed) // the bucket is empty
	oneDenied := ratelimit.Result{Limit: limit, RetryAfter: time.Second, ResetAfter: 5 * time.Second}
	require.Equal(t, oneDenied, allowN(1))
	require.Equal(t, oneDenied, allowN(1))
	require.Equal(t, int64(2), r.primary.calls.Load(), "the second denial came from the cache")
	// Three tokens: 3 s away, which only the primary knows, and not remembered: what
	// Remaining becomes meanwhile depends on the algorithm.
	threeDenied := ratelimit.Result{Limit: limit, RetryAfter: 3 * time.Second, ResetAfter: 5 * time.Second}
	require.Equal(t, threeDenied, allowN(3))
	require.Equal(t, threeDenied, allowN(3))
	require.Equal(t, int64(4), r.primary.calls.Load())
	// One token again: still the cache's.
	require.Equal(t, oneDenied, allowN(1))
	require.Equal(t, int64(4), r.primary.calls.Load())

	other := ratelimit.Limit{Rate: 1, Burst: 6}
	res, err := r.l.AllowN(ctx, "k", other, 3)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	require.Equal(t, int64(5), r.primary.calls.Load())
}

// TestDenialCacheOff: every call reaches the primary.
func TestDenialCacheOff(t *testing.T) {
	r := newRig(t, fallback.WithDenialCacheSize(-1))
	limit := ratelimit.Limit{Rate: 1, Burst: 1}
	for range 10 {
		r.allow(t, limit)
	}
	require.Equal(t, int64(10), r.primary.calls.Load())
}

// TestDenialCacheChangesNoAnswer: over a long irregular timeline of requests of costs 1 to
// 3 on one bucket, the Limiter with its cache answers exactly as the bare primary does, and
// the cache answers a good share of the denials of one token (only those are remembered).
func TestDenialCacheChangesNoAnswer(t *testing.T) {
	r := newRig(t)
	bare := newLocal(t, r.clock)
	limit := ratelimit.Limit{Rate: 5, Burst: 8}
	ctx := context.Background()
	rng := uint32(7)
	next := func(bound uint32) uint32 { // xorshift: deterministic
		rng ^= rng << 13
		rng ^= rng >> 17
		rng ^= rng << 5
		return rng % bound
	}
	denials := 0 // of one token
	for i := range 2000 {
		r.clock.Advance(time.Duration(next(60)) * ms)
		n := int(next(3)) + 1
		got, err := r.l.AllowN(ctx, "k", limit, n)
		require.NoError(t, err)
		want, err := bare.AllowN(ctx, "k", limit, n)
		require.NoError(t, err)
		if want.Allowed {
			want.Charge.Part = "primary"
		}
		require.Equal(t, want, got, "step %d, n = %d", i, n)
		if !got.Allowed && n == 1 {
			denials++
		}
	}
	cached := 2000 - int(r.primary.calls.Load())
	t.Logf("%d denials, %d of them from the cache", denials, cached)
	require.Greater(t, cached, denials/4)
}

// TestDenialCacheWhileOpen: with the breaker open, a bucket the primary was known to deny
// is still denied as the primary would, not admitted by the secondary.
func TestDenialCacheWhileOpen(t *testing.T) {
	r := newRig(t)
	limit := ratelimit.Limit{Rate: 1, Burst: 1}
	require.True(t, r.allow(t, limit).Allowed)
	require.False(t, r.allow(t, limit).Allowed) // cached for 1 s
	r.primary.fail(nil)
	other := ratelimit.Limit{Rate: 1, Burst: 100}
	for range 5 {
		r.allow(t, other)
	}
	require.Equal(t, fallback.Open, r.l.State())
	r.clock.Advance(400 * ms)
	require.Equal(t, ratelimit.Result{Limit: limit, RetryAfter: 600 * ms, ResetAfter: 600 * ms}, r.allow(t, limit))
	// Once the denial has run out, the secondary decides: its own bucket is full.
	r.clock.Advance(600 * ms)
	require.True(t, r.allow(t, limit).Allowed)
}

// TestDenialCacheHitAllocatesNothing.
func TestDenialCacheHitAllocatesNothing(t *testing.T) {
	r := newRig(t)
	limit := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 1}
	ctx := context.Background()
	r.allow(t, limit)
	require.False(t, r.allow(t, limit).Allowed)
	calls := r.primary.calls.Load()
	allocs := testing.AllocsPerRun(1000, func() {
		res, err := r.l.Allow(ctx, "k", limit)
		if err != nil || res.Allowed {
			t.Fatal("not a cached denial", res, err)
		}
	})
	require.Zero(t, allocs)
	require.Equal(t, calls, r.primary.calls.Load())
}

// TestDenialCacheIsBounded: at its cap, the cache makes room by dropping denials, first
// the expired ones; a dropped denial only sends requests back to the primary.
func TestDenialCacheIsBounded(t *testing.T) {
	clock := ratelimittest.NewClock()
	primary := newSwitched(t, clock)
	l := fallback.New(primary, nil, fallback.WithClock(clock.Now), fallback.WithDenialCacheSize(64))
	ctx := context.Background()
	limit := ratelimit.Limit{Rate: 1, Burst: 1}
	for i := range 1000 {
		key := strconv.Itoa(i)
		for range 2 {
			_, err := l.Allow(ctx, key, limit)
			require.NoError(t, err)
		}
		require.LessOrEqual(t, fallback.CacheLen(l), 64)
		clock.Advance(10 * ms)
	}
	// Every key was asked twice (allowed, then denied) and the denials were all cached:
	// a third call on the latest key is answered from the cache, on the oldest by the
	// primary (its denial was dropped or expired long ago; the bucket has refilled).
	calls := primary.calls.Load()
	res, err := l.Allow(ctx, "999", limit)
	require.NoError(t, err)
	require.False(t, res.Allowed)
	require.Equal(t, calls, primary.calls.Load())
	res, err = l.Allow(ctx, "0", limit)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	require.Equal(t, calls+1, primary.calls.Load())
}

// TestDenialCacheWarmup: a limit with a warm-up is another bucket than the plain limit of
// the same key, rate and burst: a denial of one says nothing of the other.
func TestDenialCacheWarmup(t *testing.T) {
	r := newRig(t)
	plain := ratelimit.Limit{Rate: 1, Burst: 1}
	warm := ratelimit.Limit{Rate: 1, Burst: 1, Warmup: time.Second}
	require.True(t, r.allow(t, plain).Allowed)
	require.False(t, r.allow(t, plain).Allowed)
	require.False(t, r.allow(t, plain).Allowed) // from the cache
	require.Equal(t, int64(2), r.primary.calls.Load())
	require.True(t, r.allow(t, warm).Allowed)
	require.False(t, r.allow(t, warm).Allowed)
	require.Equal(t, int64(4), r.primary.calls.Load())
}

// late is a primary whose answer the test can hold back after it has decided, as a reply
// on its way back from Redis. The Limiter calls AllowN only.
type late struct {
	*local.Limiter
	decided chan struct{} // while set, AllowN signals here once it has decided...
	release chan struct{} // ...and returns once this is closed
}

func (p *late) AllowN(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, error) {
	res, err := p.Limiter.AllowN(ctx, key, limit, n)
	if p.release != nil {
		p.decided <- struct{}{}
		<-p.release
	}
	return res, err
}

// TestDenialCacheResetWins: a denial the primary decided before a Reset or a Refund made
// through the Limiter, but answered after it, is not cached: the next request goes to the
// primary, which admits it. A limit of one token every 20 minutes, so that a cached denial
// would be served that long.
func TestDenialCacheResetWins(t *testing.T) {
	limit := ratelimit.Limit{Rate: 1.0 / 1200, Burst: 1}
	ctx := context.Background()
	for name, restore := range map[string]func(l *fallback.Limiter) error{
		"Reset": func(l *fallback.Limiter) error { return ins(l).Reset(ctx, "k", limit) },
		"Refund": func(l *fallback.Limiter) error {
			_, err := ins(l).Refund(ctx, "k", limit, 1, ratelimit.Charge{})
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			clock := ratelimittest.NewClock()
			primary := &late{Limiter: newLocal(t, clock)}
			l := fallback.New(primary, nil, fallback.WithClock(clock.Now))
			res, err := l.Allow(ctx, "k", limit)
			require.NoError(t, err)
			require.True(t, res.Allowed) // the bucket is empty

			primary.decided, primary.release = make(chan struct{}), make(chan struct{})
			answer, failed := make(chan ratelimit.Result, 1), make(chan error, 1)
			go func() {
				res, err := l.Allow(ctx, "k", limit)
				answer <- res
				failed <- err
			}()
			<-primary.decided // denied, 20 minutes to wait
			require.NoError(t, restore(l))
			close(primary.release)
			res = <-answer
			require.NoError(t, <-failed)
			require.False(t, res.Allowed, "the primary's answer is returned as it is")
			require.Equal(t, 20*time.Minute, res.RetryAfter)
			primary.decided, primary.release = nil, nil

			res, origin, err := l.AllowNOrigin(ctx, "k", limit, 1)
			require.NoError(t, err)
			require.False(t, origin.Cached)
			require.True(t, res.Allowed, "the bucket was %s after the denial", name)
		})
	}
}

// TestDenialCacheTTL: a bucket reset through another instance (here straight on the shared
// primary) goes on being denied from the cache for at most the cache's TTL after the
// denied request was sent, and never longer than the denial's RetryAfter (20 minutes).
func TestDenialCacheTTL(t *testing.T) {
	limit := ratelimit.Limit{Rate: 1.0 / 1200, Burst: 1}
	ctx := context.Background()
	tests := []struct {
		name string
		opt  fallback.Option
		ttl  time.Duration
	}{
		{"Default", nil, fallback.DefaultDenialCacheTTL},
		{"Zero", fallback.WithDenialCacheTTL(0), time.Second},
		{"Minute", fallback.WithDenialCacheTTL(time.Minute), time.Minute},
		{"Unbounded", fallback.WithDenialCacheTTL(-1), 20 * time.Minute},
		{"LongerThanRetryAfter", fallback.WithDenialCacheTTL(time.Hour), 20 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := ratelimittest.NewClock()
			primary := newSwitched(t, clock)
			l := fallback.New(primary, nil, fallback.WithClock(clock.Now), tt.opt)
			allow := func() (ratelimit.Result, observe.Origin) {
				t.Helper()
				res, origin, err := l.AllowNOrigin(ctx, "k", limit, 1)
				require.NoError(t, err)
				return res, origin
			}
			res, _ := allow()
			require.True(t, res.Allowed)
			res, origin := allow() // t0: denied by the primary, and cached
			require.False(t, res.Allowed)
			require.False(t, origin.Cached)
			require.NoError(t, primary.Reset(ctx, "k", limit)) // another instance's reset

			clock.Advance(tt.ttl - time.Nanosecond)
			res, origin = allow()
			require.True(t, origin.Cached, "t0 + TTL - 1ns: still the cache's")
			require.Equal(t, 20*time.Minute-tt.ttl+time.Nanosecond, res.RetryAfter, "the primary's RetryAfter, aged")
			clock.Advance(time.Nanosecond)
			res, origin = allow()
			require.False(t, origin.Cached, "t0 + TTL: the primary's")
			require.True(t, res.Allowed)
		})
	}
}

// TestDenialCacheAlgorithm: a limit naming another algorithm is another bucket, whose
// denial says nothing of the first; a Reset of the primary's default named explicitly wins
// over the denial cached for the same limit left to the default, the same bucket on the
// primary.
func TestDenialCacheAlgorithm(t *testing.T) {
	r := newRig(t)
	plain := ratelimit.Limit{Rate: 1.0 / 1200, Burst: 1}
	log := plain
	log.Algorithm = ratelimit.SlidingWindowLog
	named := plain
	named.Algorithm = ratelimit.TokenBucket // the primary's default
	require.True(t, r.allow(t, plain).Allowed)
	require.False(t, r.allow(t, plain).Allowed)
	require.False(t, r.allow(t, plain).Allowed) // from the cache
	require.Equal(t, int64(2), r.primary.calls.Load())
	require.True(t, r.allow(t, log).Allowed, "another algorithm, another bucket")
	require.Equal(t, int64(3), r.primary.calls.Load())

	require.NoError(t, ins(r.l).Reset(context.Background(), "k", named))
	res, origin, err := r.l.AllowNOrigin(context.Background(), "k", plain, 1)
	require.NoError(t, err)
	require.False(t, origin.Cached, "the Reset dropped the denial of the same bucket under its other name")
	require.True(t, res.Allowed)
}

// TestDenialCacheKeepUsage: the denial of a limit with KeepUsage answers only requests under
// the same numbers, and an admission or a refund of the bucket under other numbers drops
// it: a token given back under B is there for a request under A at once.
func TestDenialCacheKeepUsage(t *testing.T) {
	ctx := context.Background()
	a := ratelimit.Limit{Rate: 1.0 / 1200, Burst: 1, KeepUsage: true}
	b := ratelimit.Limit{Rate: 1.0 / 600, Burst: 2, KeepUsage: true}
	clock := ratelimittest.NewClock()
	l := fallback.New(newLocal(t, clock), nil, fallback.WithClock(clock.Now))
	res, err := l.Allow(ctx, "k", a)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	res, _, err = l.AllowNOrigin(ctx, "k", a, 1)
	require.NoError(t, err)
	require.False(t, res.Allowed) // 20 minutes to wait, remembered
	res, origin, err := l.AllowNOrigin(ctx, "k", a, 1)
	require.NoError(t, err)
	require.True(t, origin.Cached)
	require.False(t, res.Allowed)

	res, origin, err = l.AllowNOrigin(ctx, "k", b, 1)
	require.NoError(t, err)
	require.False(t, origin.Cached, "a denial under A proves nothing under B")
	require.True(t, res.Allowed, "B's burst of 2 has one more")
	_, err = ins(l).Refund(ctx, "k", b, 2, ratelimit.Charge{})
	require.NoError(t, err)
	res, origin, err = l.AllowNOrigin(ctx, "k", a, 1)
	require.NoError(t, err)
	require.False(t, origin.Cached)
	require.True(t, res.Allowed, "the refund under B emptied the bucket")
}
