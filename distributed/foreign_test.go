package distributed_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/conformance"
	"github.com/sluice-go/ratelimit/internal/redistest"
)

// tags are the algorithms' tags in their keys (docs/redis.md).
var tags = map[ratelimit.Algorithm]string{
	ratelimit.TokenBucket: "tb", ratelimit.FixedWindow: "fw", ratelimit.SlidingWindowLog: "swl",
	ratelimit.SlidingWindowCounter: "swc", ratelimit.LeakyBucket: "lb",
}

// foreign is a value something other than the limiter may have left at a bucket's key:
// the command that writes it, with the key in place of "%k".
type foreign struct {
	name  string
	write []string
}

// foreignValues returns the values no script of alg can read at a key of Burst 1.
func foreignValues(alg ratelimit.Algorithm) []foreign {
	values := []foreign{
		{"Hash", []string{"HSET", "%k", "field", "1"}},
		{"List", []string{"RPUSH", "%k", "1"}},
		{"Set", []string{"SADD", "%k", "1"}},
	}
	strings := []foreign{
		{"NaN", []string{"SET", "%k", "nan"}},
		{"Inf", []string{"SET", "%k", "inf"}},
		{"MinusInf", []string{"SET", "%k", "-inf"}},
		{"Text", []string{"SET", "%k", "hello"}},
		{"Empty", []string{"SET", "%k", ""}},
	}
	switch alg {
	case ratelimit.SlidingWindowLog:
		// Strings are of the wrong type; a sorted set is the right one, but no entry of
		// this script's is ever at +inf, which would never leave the window.
		values = append(values, strings...)
		values = append(values, foreign{"EntryAtInf", []string{"ZADD", "%k", "+inf", "1"}})
	case ratelimit.TokenBucket, ratelimit.LeakyBucket:
		values = append(values, strings...)
		values = append(values,
			foreign{"ZSet", []string{"ZADD", "%k", "1", "1"}},
			foreign{"TwoTo53", []string{"SET", "%k", "9007199254740992"}},
			foreign{"MinusTwoTo53", []string{"SET", "%k", "-9007199254740992"}},
			foreign{"Huge", []string{"SET", "%k", "1e300"}},
		)
	case ratelimit.FixedWindow:
		values = append(values, strings...)
		values = append(values,
			foreign{"ZSet", []string{"ZADD", "%k", "1", "1"}},
			foreign{"Number", []string{"SET", "%k", "5"}},
			foreign{"CountAboveBurst", []string{"SET", "%k", "1:2"}},
			foreign{"TrailingText", []string{"SET", "%k", "1:1x"}},
		)
	case ratelimit.SlidingWindowCounter:
		values = append(values, strings...)
		values = append(values,
			foreign{"ZSet", []string{"ZADD", "%k", "1", "1"}},
			foreign{"FixedWindowValue", []string{"SET", "%k", "1:1"}},
			foreign{"CountAboveBurst", []string{"SET", "%k", "1:2:0"}},
			foreign{"PreviousAboveBurst", []string{"SET", "%k", "1:0:2"}},
		)
	}
	return values
}

// TestForeignValues puts, at a bucket's key, each value no script can read, with no
// expiry, and asks for a token: every algorithm answers with an error wrapping
// ratelimit.ErrInvalidState that does not name the key, and writes nothing (the value and
// its lack of expiry stay as they were). Other buckets of the same limiter keep working.
func TestForeignValues(t *testing.T) {
	server := redistest.NewServer(t)
	client := newClient(t, server.Addr())
	ctx := context.Background()
	limit := ratelimit.Limit{Rate: 1, Burst: 1}
	const user = "alice@example.com" // personal data: no error may print it
	for _, alg := range conformance.Algorithms() {
		tag := tags[alg]
		for _, f := range foreignValues(alg) {
			t.Run(alg.String()+"/"+f.name, func(t *testing.T) {
				prefix := uniquePrefix()
				l := newLimiter(t, client, conformance.NewClock(),
					distributed.WithAlgorithm(alg), distributed.WithPrefix(prefix))
				key := prefix + user + ":" + tag + ":1:1"
				write := append([]string(nil), f.write...)
				write[1] = key
				_, err := server.Do(write...)
				require.NoError(t, err)
				before, err := server.Do("DUMP", key)
				require.NoError(t, err)

				for range 2 {
					res, err := l.Allow(ctx, user, limit)
					require.ErrorIs(t, err, ratelimit.ErrInvalidState)
					require.NotContains(t, err.Error(), "alice")
					require.Equal(t, ratelimit.Result{Limit: limit}, res)
				}
				if alg == ratelimit.LeakyBucket {
					waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
					err := l.Wait(waitCtx, user, limit)
					cancel()
					require.ErrorIs(t, err, ratelimit.ErrInvalidState)
					require.NotContains(t, err.Error(), "alice")
				}

				after, err := server.Do("DUMP", key)
				require.NoError(t, err)
				require.Equal(t, before, after, "the value was written to")
				ttl, err := server.Do("PTTL", key)
				require.NoError(t, err)
				require.Equal(t, int64(-1), ttl, "the key was given an expiry")

				// Another bucket: its token back in 1 s (W = 1 s; the counter's weighs for two).
				reset := time.Second
				if alg == ratelimit.SlidingWindowCounter {
					reset = 2 * time.Second
				}
				res, err := l.Allow(ctx, "bob", limit)
				require.NoError(t, err)
				require.Equal(t, ratelimit.Result{Allowed: true, Limit: limit, ResetAfter: reset,
					Charge: ratelimit.Charge{At: conformance.NewClock().Now()}}, res) // the clock never moves here
			})
		}
	}
}

// TestWrittenKeysExpire: a value a script can read but that has no expiry (as something
// else may leave it) gets one as soon as the script writes to it: no script leaves a key it
// wrote without an expiry.
func TestWrittenKeysExpire(t *testing.T) {
	server := redistest.NewServer(t)
	client := newClient(t, server.Addr())
	limit := ratelimit.Limit{Rate: 1, Burst: 1}
	readable := map[ratelimit.Algorithm][]string{
		ratelimit.TokenBucket:          {"SET", "%k", "5"}, // a TAT in 2020: a full bucket
		ratelimit.LeakyBucket:          {"SET", "%k", "5"},
		ratelimit.FixedWindow:          {"SET", "%k", "0:1"}, // a count of window 0, in 1970
		ratelimit.SlidingWindowCounter: {"SET", "%k", "0:1:1"},
		ratelimit.SlidingWindowLog:     {"ZADD", "%k", "5", "5:1"}, // an entry long gone
	}
	for _, alg := range conformance.Algorithms() {
		t.Run(alg.String(), func(t *testing.T) {
			prefix := uniquePrefix()
			// The Redis clock, so that Redis's own expiry is the script's.
			l, err := distributed.New(client, distributed.WithAlgorithm(alg), distributed.WithPrefix(prefix))
			require.NoError(t, err)
			key := prefix + "k:" + tags[alg] + ":1:1"
			write := append([]string(nil), readable[alg]...)
			write[1] = key
			_, err = server.Do(write...)
			require.NoError(t, err)

			res, err := l.Allow(context.Background(), "k", limit)
			require.NoError(t, err)
			require.True(t, res.Allowed)
			ttl, err := server.Do("PTTL", key)
			require.NoError(t, err)
			// W = 1 s, two for the counter: the key lives at most that long.
			require.Positive(t, ttl)
			require.LessOrEqual(t, ttl, int64(2000))
		})
	}
}
