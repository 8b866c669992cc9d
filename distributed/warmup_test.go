package distributed_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/conformance"
	"github.com/sluice-go/ratelimit/internal/redistest"
)

// TestWarmup runs the warm-up rules on one Redis: the token bucket's tables, and every other
// algorithm's refusal.
func TestWarmup(t *testing.T) {
	server := redistest.NewServer(t)
	client := newClient(t, server.Addr())
	for _, alg := range conformance.Algorithms() {
		t.Run(alg.String(), func(t *testing.T) {
			conformance.RunWarmup(t, alg, redisHarness(client, alg))
		})
	}
}

// TestWarmupKeyLayout pins what a bucket with a warm-up looks like in Redis: its key, tagged
// "tbw" and ending in the warm-up in µs, and its value, "s:T": when the warm-up began, in µs
// since 2020, and the TAT on the warm clock.
func TestWarmupKeyLayout(t *testing.T) {
	server := redistest.NewServer(t)
	clock := conformance.NewClock() // 2026-01-01, 2192 days after 2020-01-01
	l, err := distributed.New(newClient(t, server.Addr()), distributed.WithClock(clock.Now))
	require.NoError(t, err)
	limit := ratelimit.Limit{Rate: 10, Burst: 20, Warmup: 30 * time.Second}
	ctx := context.Background()

	res, err := l.Allow(ctx, "user:42", limit)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	const key = "ratelimit:user:42:tbw:10:20:30000000"
	// s = 2192 days × 86,400 s in µs. Cold, the bucket holds τ(0) = 20/3: T = 20 − 20/3 + 1.
	got, err := server.Do("GET", key)
	require.NoError(t, err)
	assert.Equal(t, "189388800000000:14.333333333333332", got)
	// The plain bucket of the same key and rate and burst is another key.
	_, err = l.Allow(ctx, "user:42", ratelimit.Limit{Rate: 10, Burst: 20})
	require.NoError(t, err)
	n, err := server.Do("EXISTS", "ratelimit:user:42:tb:10:20")
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)

	// A denial writes nothing, unless it finds the bucket cold: then the warm-up it begins
	// is written, with an expiry, even though the request for the whole burst is denied.
	res, err = l.AllowN(ctx, "user:43", limit, 20)
	require.NoError(t, err)
	require.False(t, res.Allowed)
	got, err = server.Do("GET", "ratelimit:user:43:tbw:10:20:30000000")
	require.NoError(t, err)
	assert.Equal(t, "189388800000000:0", got)
	for range 5 { // the rest of τ(0) = 6.67: 5 more, then a denial
		res, err = l.Allow(ctx, "user:42", limit)
		require.NoError(t, err)
		require.True(t, res.Allowed)
	}
	res, err = l.Allow(ctx, "user:42", limit)
	require.NoError(t, err)
	require.False(t, res.Allowed)
	got, err = server.Do("GET", key)
	require.NoError(t, err)
	assert.Equal(t, "189388800000000:19.333333333333332", got)
}

// TestWarmupRedisClock runs without a test clock: the script reads Redis TIME, and the key
// expires once the bucket is cold, when W(d) reaches max(T, W(P)) + Burst.
func TestWarmupRedisClock(t *testing.T) {
	server := redistest.NewServer(t)
	prefix := uniquePrefix()
	l, err := distributed.New(newClient(t, server.Addr()), distributed.WithPrefix(prefix))
	require.NoError(t, err)
	ctx := context.Background()
	// W(P) = 10 · 2/3 · 30 = 200 tokens; T = 14.33 after one request: cold when W = 220, 2 s
	// of 10 a second after the warm-up's 30 s.
	limit := ratelimit.Limit{Rate: 10, Burst: 20, Warmup: 30 * time.Second}
	res, err := l.Allow(ctx, "k", limit)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	require.Equal(t, 5, res.Remaining) // ⌊20/3⌋ − 1
	ttl, err := server.Do("PTTL", prefix+"k:tbw:10:20:30000000")
	require.NoError(t, err)
	assert.InDelta(t, 32_001, ttl, 1000)
}

// TestWarmupForeignValues: a value warmup.lua cannot have written, at a warm bucket's key,
// is an error wrapping ratelimit.ErrInvalidState that does not name the key, and is left as
// it is, without an expiry. A plain bucket's TAT is one of them: the tags keep the two
// apart, and a stray one is refused rather than misread.
func TestWarmupForeignValues(t *testing.T) {
	server := redistest.NewServer(t)
	client := newClient(t, server.Addr())
	ctx := context.Background()
	limit := ratelimit.Limit{Rate: 1, Burst: 1, Warmup: time.Second}
	const user = "alice@example.com" // personal data: no error may print it
	values := []foreign{
		{"Hash", []string{"HSET", "%k", "field", "1"}},
		{"ZSet", []string{"ZADD", "%k", "1", "1"}},
		{"PlainTAT", []string{"SET", "%k", "5"}},
		{"Empty", []string{"SET", "%k", ""}},
		{"Text", []string{"SET", "%k", "hello"}},
		{"NaN", []string{"SET", "%k", "1:nan"}},
		{"Inf", []string{"SET", "%k", "1:inf"}},
		{"StartNotWhole", []string{"SET", "%k", "1.5:1"}},
		{"StartText", []string{"SET", "%k", "x:1"}},
		{"ThreeFields", []string{"SET", "%k", "1:2:3"}},
		{"StartTwoTo53", []string{"SET", "%k", "9007199254740992:1"}},
		{"TATTwoTo53", []string{"SET", "%k", "1:9007199254740992"}},
		{"Huge", []string{"SET", "%k", "1:1e300"}},
	}
	for _, f := range values {
		t.Run(f.name, func(t *testing.T) {
			prefix := uniquePrefix()
			l := newLimiter(t, client, conformance.NewClock(), distributed.WithPrefix(prefix))
			key := prefix + user + ":tbw:1:1:1000000"
			write := append([]string(nil), f.write...)
			write[1] = key
			_, err := server.Do(write...)
			require.NoError(t, err)
			before, err := server.Do("DUMP", key)
			require.NoError(t, err)

			for _, call := range []func() (ratelimit.Result, error){
				func() (ratelimit.Result, error) { return l.Allow(ctx, user, limit) },
				func() (ratelimit.Result, error) { return l.Peek(ctx, user, limit, 1) },
				func() (ratelimit.Result, error) { return l.Refund(ctx, user, limit, 1, ratelimit.Charge{}) },
			} {
				res, err := call()
				require.ErrorIs(t, err, ratelimit.ErrInvalidState)
				require.NotContains(t, err.Error(), "alice")
				require.Equal(t, ratelimit.Result{Limit: limit}, res)
			}
			after, err := server.Do("DUMP", key)
			require.NoError(t, err)
			require.Equal(t, before, after, "the value was written to")
			ttl, err := server.Do("PTTL", key)
			require.NoError(t, err)
			require.Equal(t, int64(-1), ttl, "the key was given an expiry")
		})
	}
}
