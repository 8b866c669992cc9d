package distributed_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// tags are the algorithms' tags in their keys
// (https://github.com/sluice-go/ratelimit/blob/main/docs/redis.md).
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

// foreignCase is a bucket to put foreign values at: an algorithm, a limit of Burst 3 and
// the tag and limit its key ends with.
type foreignCase struct {
	name   string
	alg    ratelimit.Algorithm
	limit  ratelimit.Limit
	suffix string
}

func foreignCases() []foreignCase {
	var cases []foreignCase
	for _, alg := range ratelimittest.Algorithms() {
		cases = append(cases, foreignCase{alg.String(), alg, ratelimit.Limit{Rate: 1, Burst: 3}, ":" + tags[alg] + ":1:3"})
	}
	return append(cases, foreignCase{"Warmup", ratelimit.TokenBucket,
		ratelimit.Limit{Rate: 1, Burst: 3, Warmup: 10 * time.Second}, ":tbw:1:3:10000000"})
}

// TestForeignValues puts, at a bucket's key, each value no script can read, with no
// expiry, then asks for a token Burst + 2 times at one instant, by AllowN, by AllowAll and,
// for the leaky bucket, first by Wait: every algorithm decides exactly as for a new bucket
// (the answers are a fresh key's: Burst admitted, a third of it for a cold warm-up), and
// the admission replaces the value with the bucket's own, which expires.
func TestForeignValues(t *testing.T) {
	server := redistest.NewServer(t)
	client := newClient(t, server.Addr())
	ctx := context.Background()
	const user = "alice@example.com"
	for _, c := range foreignCases() {
		values := foreignValues(c.alg)
		if c.limit.Warmup != 0 {
			// A plain bucket's TAT is one: the tags keep the two apart.
			values = append(values,
				foreign{"PlainTAT", []string{"SET", "%k", "5"}},
				foreign{"NaNPair", []string{"SET", "%k", "1:nan"}},
				foreign{"InfPair", []string{"SET", "%k", "1:inf"}},
				foreign{"StartNotWhole", []string{"SET", "%k", "1.5:1"}},
				foreign{"StartText", []string{"SET", "%k", "x:1"}},
				foreign{"ThreeFields", []string{"SET", "%k", "1:2:3"}},
				foreign{"StartTwoTo53", []string{"SET", "%k", "9007199254740992:1"}},
				foreign{"TATTwoTo53", []string{"SET", "%k", "1:9007199254740992"}},
				foreign{"HugePair", []string{"SET", "%k", "1:1e300"}},
			)
		}
		paths := []string{"AllowN", "AllowAll"}
		admits := c.limit.Burst
		if c.limit.Warmup != 0 {
			paths = paths[:1] // AllowAll refuses a warm-up
			admits = 1        // a cold bucket holds a third of its burst
		}
		if c.alg == ratelimit.LeakyBucket {
			paths = append(paths, "Wait")
		}
		for _, f := range values {
			for _, path := range paths {
				t.Run(c.name+"/"+f.name+"/"+path, func(t *testing.T) {
					prefix := uniquePrefix()
					l := newLimiter(t, client, ratelimittest.NewClock(),
						distributed.WithAlgorithm(c.alg), distributed.WithPrefix(prefix))
					key := prefix + user + c.suffix
					write := append([]string(nil), f.write...)
					write[1] = key
					_, err := server.Do(write...)
					require.NoError(t, err)

					decide := func(key string, i int) ratelimit.Result {
						t.Helper()
						switch {
						case path == "Wait" && i == 0:
							waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
							defer cancel()
							require.NoError(t, l.Wait(waitCtx, key, c.limit))
							return ratelimit.Result{Allowed: true} // Wait says no more
						case path == "AllowAll":
							m, err := l.AllowAll(ctx, []ratelimit.Request{{Key: key, Limit: c.limit, N: 1}})
							require.NoError(t, err)
							return m.Results[0]
						}
						res, err := l.Allow(ctx, key, c.limit)
						require.NoError(t, err)
						return res
					}
					// Peek, too, answers as for a new bucket, and writes nothing.
					before, err := server.Do("DUMP", key)
					require.NoError(t, err)
					got, err := l.Peek(ctx, user, c.limit, 1)
					require.NoError(t, err)
					want, err := l.Peek(ctx, "bob", c.limit, 1)
					require.NoError(t, err)
					require.Equal(t, want, got, "Peek")
					peeked, err := server.Do("DUMP", key)
					require.NoError(t, err)
					require.Equal(t, before, peeked, "Peek wrote")

					admitted := 0
					for i := range c.limit.Burst + 2 {
						got, want := decide(user, i), decide("bob", i) // bob's bucket is new
						require.Equal(t, want, got, "request %d", i)
						if got.Allowed {
							admitted++
						}
					}
					require.Equal(t, admits, admitted)

					after, err := server.Do("DUMP", key)
					require.NoError(t, err)
					bob, err := server.Do("DUMP", prefix+"bob"+c.suffix)
					require.NoError(t, err)
					if f.name != "EntryAtInf" { // which is left to expire with the key
						require.Equal(t, bob, after, "the bucket's value is not a new bucket's")
					}
					ttl, err := server.Do("PTTL", key)
					require.NoError(t, err)
					require.Positive(t, ttl, "the key has no expiry")
				})
			}
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
	for _, alg := range ratelimittest.Algorithms() {
		t.Run(alg.String(), func(t *testing.T) {
			prefix := uniquePrefix()
			// The Redis clock, so that Redis's own expiry is the script's.
			l, err := distributed.New(client, distributed.WithAlgorithm(alg), distributed.WithPrefix(prefix),
				distributed.WithTimeout(10*time.Second))
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
