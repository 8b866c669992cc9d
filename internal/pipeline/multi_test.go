package pipeline_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	clocal "github.com/sluice-go/ratelimit/concurrency/local"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/bucket"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/otelmetrics"
	"github.com/sluice-go/ratelimit/otelmetrics/otelmetricstest"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// 2 a second and 5 a minute on one key.
var secondAndMinute = []ratelimit.Request{
	{Key: "ip:192.0.2.1", Limit: ratelimit.PerSecond(2), Name: "second"},
	{Key: "ip:192.0.2.1", Limit: ratelimit.PerMinute(5), Name: "minute"},
}

// With WithLimits, every middleware answers from the binding limit: a denial by the
// per-second limit waits its 500 ms (Retry-After: 1 s), and an allowed request reports the
// limit with the fewest left.
func TestLimits(t *testing.T) {
	denied := ratelimit.MultiResult{
		Results: []ratelimit.Result{
			{Limit: ratelimit.PerSecond(2), RetryAfter: 500 * time.Millisecond, ResetAfter: time.Second},
			{Allowed: true, Limit: ratelimit.PerMinute(5), Remaining: 2, ResetAfter: 36 * time.Second},
		},
	}
	allowed := ratelimit.MultiResult{
		Allowed: true,
		Results: []ratelimit.Result{
			{Allowed: true, Limit: ratelimit.PerSecond(2), Remaining: 1, ResetAfter: 500 * time.Millisecond},
			{Allowed: true, Limit: ratelimit.PerMinute(5), Remaining: 4, ResetAfter: 12 * time.Second},
		},
	}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			l := &ratelimittest.Multi{MultiResult: denied}
			got := tg.serve(t, setup{limiter: l, limits: secondAndMinute})(context.Background())
			assert.Equal(t, answer{kind: "denied", fields: map[string]string{"retry-after": "1",
				"x-ratelimit-limit": "2", "x-ratelimit-remaining": "0", "x-ratelimit-reset": "1"}}, got)

			l = &ratelimittest.Multi{MultiResult: allowed}
			got = tg.serve(t, setup{limiter: l, limits: secondAndMinute})(context.Background())
			assert.Equal(t, answer{kind: "ok", ran: true, fields: map[string]string{
				"x-ratelimit-limit": "2", "x-ratelimit-remaining": "1", "x-ratelimit-reset": "1"}}, got)
		})
	}
}

// WithRefundIf gives the tokens of every limit back after a request its function picks
// (here: the ones that succeeded), and never those of a request that was denied.
func TestRefundIf(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			// Each refund names the charge of its own limit's decision.
			at := time.UnixMicro(1_000_000)
			l := &ratelimittest.Multi{MultiResult: ratelimit.MultiResult{Allowed: true,
				Results: []ratelimit.Result{{Allowed: true, Charge: ratelimit.Charge{At: at, Part: "a"}},
					{Allowed: true, Charge: ratelimit.Charge{At: at.Add(time.Microsecond), Part: "b"}}}}}
			do := tg.serve(t, setup{limiter: l, limits: secondAndMinute, refundOK: true})
			assert.Equal(t, "ok", do(context.Background()).kind)
			assert.Equal(t, []string{`second|ip:192.0.2.1 1 charged at 1000000 by "a"`, `minute|ip:192.0.2.1 1 charged at 1000001 by "b"`},
				l.Refunds())

			single := &ratelimittest.Multi{Stub: ratelimittest.Stub{Result: ratelimit.Result{Allowed: true, Remaining: 1,
				Charge: ratelimit.Charge{At: at}}}}
			do = tg.serve(t, setup{limiter: single, limit: ratelimit.PerSecond(2), refundOK: true,
				cost: func() int { return 2 }})
			assert.Equal(t, "ok", do(context.Background()).kind)
			assert.Len(t, single.Refunds(), 1)
			assert.Contains(t, single.Refunds()[0], "charged at 1000000")

			deniedOne := &ratelimittest.Multi{Stub: ratelimittest.Stub{Result: ratelimit.Result{RetryAfter: time.Second}}}
			do = tg.serve(t, setup{limiter: deniedOne, limit: ratelimit.PerSecond(2), refundOK: true})
			assert.Equal(t, "denied", do(context.Background()).kind)
			assert.Empty(t, deniedOne.Refunds())
		})
	}
}

// Counting only what fails, on both backends: PerMinute(1) per client, and every request
// that succeeded refunded. Five requests in a row all pass; without the refund the second
// would be denied. Then several limits at once on the same limiter: 2 an hour and 5 a day,
// all or nothing, the third request denied by the hourly one (slow limits, so that no token
// comes back during the test, whatever the machine's load).
func TestRefundAndLimits(t *testing.T) {
	server := redistest.NewServer(t)
	client := redis.NewClient(&redis.Options{Addr: server.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	backends := []struct {
		name string
		open func(t *testing.T, i int) ratelimit.Limiter
	}{
		{"Redis", func(t *testing.T, i int) ratelimit.Limiter {
			l, err := distributed.New(client, distributed.WithPrefix(fmt.Sprintf("refund%d:", i)))
			require.NoError(t, err)
			t.Cleanup(func() { _ = l.Close() })
			return l
		}},
		{"Local", func(t *testing.T, _ int) ratelimit.Limiter {
			l := local.New()
			t.Cleanup(func() { _ = l.Close() })
			return l
		}},
	}
	for _, backend := range backends {
		for i, tg := range targets {
			t.Run(backend.name+"/"+tg.name, func(t *testing.T) {
				l := backend.open(t, i)
				do := tg.serve(t, setup{limiter: l, limit: ratelimit.PerMinute(1), refundOK: true})
				for range 5 {
					require.Equal(t, "ok", do(context.Background()).kind)
				}
				do = tg.serve(t, setup{limiter: l, limits: []ratelimit.Request{
					{Key: "ip:192.0.2.1", Limit: ratelimit.PerHour(2), Name: "hour"},
					{Key: "ip:192.0.2.1", Limit: ratelimit.Limit{Rate: 5.0 / 86400, Burst: 5}, Name: "day"},
				}})
				var kinds []string
				for range 3 {
					kinds = append(kinds, do(context.Background()).kind)
				}
				assert.Equal(t, []string{"ok", "ok", "denied"}, kinds)
			})
		}
	}
}

// One rule for a missing key, whatever gives the limits: a request whose key is empty is
// limited under UnkeyedKey, with WithLimit (a key function that fails) as with WithLimits
// (an entry with no key), and the error handler is told.
func TestMissingKeySameAnswer(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			single := tg.serve(t, setup{limiter: localLimiter(t), limit: ratelimit.PerMinute(1), keyFails: true})
			multi := tg.serve(t, setup{limiter: localLimiter(t),
				limits: []ratelimit.Request{{Limit: ratelimit.PerMinute(1), Name: "m"}}})
			for _, want := range []string{"ok", "denied", "denied"} {
				assert.Equal(t, want, single(context.Background()).kind)
				assert.Equal(t, want, multi(context.Background()).kind)
			}
		})
	}
}

// A list of limits the limiter cannot decide as a whole (the same bucket twice) is a
// mistake in the program: refused (500), never let through by the default fail-open.
func TestInvalidRequestIsRefused(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			twice := []ratelimit.Request{{Key: "k", Limit: ratelimit.PerMinute(3)}, {Key: "k", Limit: ratelimit.PerMinute(3)}}
			do := tg.serve(t, setup{limiter: localLimiter(t), limits: twice})
			assert.Equal(t, "invalid", do(context.Background()).kind)
		})
	}
}

// WithPolicyName names the limits of WithLimits that have no name of their own, in the
// headers and in the metrics, as it names the one limit of WithLimit.
func TestPolicyNameNamesUnnamedLimits(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			obs, reader := otelmetricstest.NewObserver(t, otelmetrics.WithDurationSample(1))
			do := tg.serve(t, setup{limiter: localLimiter(t), observer: obs, name: "login", ietf: true,
				limits: []ratelimit.Request{{Key: "k", Limit: ratelimit.PerMinute(5)}, {Key: "k", Limit: ratelimit.PerHour(20), Name: "hour"}}})
			got := do(context.Background())
			assert.Equal(t, `"login";q=5;w=60, "hour";q=20;w=3600`, got.fields["ratelimit-policy"])
			counts := otelmetricstest.Collect(t, reader).Counts(t, "ratelimit.requests")
			assert.Equal(t, map[string]int64{allowedPolicy("login"): 1, allowedPolicy("hour"): 1}, counts)
		})
	}
}

func allowedPolicy(name string) string {
	return "ratelimit.policy=" + name + ",ratelimit.priority=critical,ratelimit.result=allowed,ratelimit.shadow=false"
}

// Two limits with KeepUsage of one policy keep two buckets, "policy|key" and
// "policy#1|key" (bucket.Name), each across a change of its numbers; a policy whose name
// spells another's second limit, "login#1", has a bucket of its own.
func TestKeepUsageLimitsOfOnePolicy(t *testing.T) {
	keep := func(l ratelimit.Limit) ratelimit.Limit { l.KeepUsage = true; return l }
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			l := localLimiter(t)
			minute, hour := keep(ratelimit.PerMinute(3)), keep(ratelimit.PerHour(10))
			limits := []ratelimit.Request{{Key: "k", Limit: minute, Name: "login"}, {Key: "k", Limit: hour, Name: "login"}}
			do := tg.serve(t, setup{limiter: l, limitsFn: func() []ratelimit.Request { return limits }})
			got := do(context.Background())
			require.Equal(t, "ok", got.kind)
			assert.Equal(t, "2", got.fields["x-ratelimit-remaining"]) // 3 − 1, the minute's
			// Other numbers: the same two buckets, one token spent in each.
			limits = []ratelimit.Request{{Key: "k", Limit: keep(ratelimit.PerMinute(2)), Name: "login"}, {Key: "k", Limit: keep(ratelimit.PerHour(2)), Name: "login"}}
			got = do(context.Background())
			require.Equal(t, "ok", got.kind)
			assert.Equal(t, "0", got.fields["x-ratelimit-remaining"])
			res, err := l.(ratelimit.Inspector).Peek(context.Background(), bucket.Name{Policy: "login", Limit: 1, Keep: true}.Key("k"), hour, 1)
			require.NoError(t, err)
			assert.Equal(t, 7, res.Remaining, "the hour's bucket, under its first numbers: 10 − 2 − 1")

			// The hour's bucket is drained (7 left under 2/h: none); "login#1"'s is new.
			limits = []ratelimit.Request{{Key: "k", Limit: keep(ratelimit.PerHour(2)), Name: "login#1"}}
			got = do(context.Background())
			require.Equal(t, "ok", got.kind)
			assert.Equal(t, "1", got.fields["x-ratelimit-remaining"])
		})
	}
}

// A policy named "shadow" deciding the key "login|victim" and the policy "login" deciding
// "victim" in shadow mode have buckets of their own: a caller who picks the name and the key
// cannot spend another policy's shadow bucket.
func TestShadowBucketIsNoPolicyBucket(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			l := localLimiter(t)
			attack := tg.serve(t, setup{limiter: l, limit: ratelimit.PerMinute(1), name: "shadow", key: "login|victim"})
			victim := tg.serve(t, setup{limiter: l, limit: ratelimit.PerMinute(1), name: "login", key: "victim", shadow: true})
			require.Equal(t, "ok", attack(context.Background()).kind)
			require.Equal(t, "denied", attack(context.Background()).kind)
			for _, key := range []string{"login#shadow|victim", "login|victim"} {
				res, err := l.(ratelimit.Inspector).Peek(context.Background(), key, ratelimit.PerMinute(1), 1)
				require.NoError(t, err)
				assert.True(t, res.Allowed, "%s untouched by the attacker", key)
			}
			require.Equal(t, "ok", victim(context.Background()).kind)
			res, err := l.(ratelimit.Inspector).Peek(context.Background(), "login#shadow|victim", ratelimit.PerMinute(1), 1)
			require.NoError(t, err)
			assert.False(t, res.Allowed, "the victim's shadow request was counted in its own bucket")
		})
	}
}

// A request refused for lack of a permit never runs, and its rate-limit charge is given
// back: with the key's one permit held, four refusals leave a 5/h quota whole, and the
// five requests after the permit's release all run. A request whose context ends while it
// waits for a permit is refunded too.
func TestPermitRefusalRefundsRate(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			l := localLimiter(t)
			conc := clocal.New(clocal.WithQueue(-1, clocal.OldestFirst))
			t.Cleanup(func() { _ = conc.Close() })
			do := tg.serve(t, setup{limiter: l, limit: ratelimit.PerHour(5), name: "export", key: "user:1", conc: conc, inFlight: 1})
			held, err := conc.Acquire(context.Background(), bucket.Name{Policy: "export"}.Key("user:1"), 1)
			require.NoError(t, err)
			for range 4 {
				got := do(context.Background())
				require.NotEqual(t, "ok", got.kind)
				require.False(t, got.ran)
			}
			res, err := l.(ratelimit.Inspector).Peek(context.Background(), bucket.Name{Policy: "export"}.Key("user:1"), ratelimit.PerHour(5), 1)
			require.NoError(t, err)
			assert.Equal(t, 4, res.Remaining, "5 − the one a request would take: the refusals took nothing")
			held.Release()
			for range 5 {
				require.Equal(t, "ok", do(context.Background()).kind)
			}
			assert.Equal(t, "denied", do(context.Background()).kind)
		})
	}
}
