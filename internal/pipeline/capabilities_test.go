package pipeline_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/httpmw"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/rules"
)

// hiding is a third party's backend built on one of the kit's: it decides, and has no
// capability (no Unwrap, no As).
type hiding struct{ ratelimit.Limiter }

// lending is a third party's wrapper: it has Unwrap, and so lends what it wraps.
type lending struct{ ratelimit.Limiter }

func (w lending) Unwrap() ratelimit.Limiter { return w.Limiter }

// nobody is an Observer that listens to nothing.
type nobody struct{}

func (nobody) ObserveDecision(context.Context, observe.Decision) {}

// capabilityCheck is one capability and the middleware's check at construction that needs
// it: adding a capability to the kit is one row of capabilityChecks.
type capabilityCheck struct {
	name string
	has  func(ratelimit.Limiter) bool
	// refused reports whether the middleware refuses to start on l for want of the
	// capability (New panics).
	refused func(l ratelimit.Limiter) bool
	// either: a limiter made of two (a fallback) has the capability when either part has
	// it, not only when both have it.
	either bool
}

func has[T any](l ratelimit.Limiter) bool {
	_, ok := ratelimit.As[T](l)
	return ok
}

// refuses reports whether httpmw.New panics on l with opts, as every middleware's
// constructor does on the pipeline's error.
func refuses(l ratelimit.Limiter, opts ...httpmw.Option) (refused bool) {
	defer func() { refused = recover() != nil }()
	httpmw.New(l, opts...)
	return false
}

// tooLong is a limit every backend of the kit refuses, and Limit.Validate does not: a
// sliding log longer than args.MaxLogBurst.
var tooLong = ratelimit.Limit{Rate: 1, Burst: args.MaxLogBurst + 1, Algorithm: ratelimit.SlidingWindowLog}

var capabilityChecks = []capabilityCheck{
	{"MultiLimiter", has[ratelimit.MultiLimiter], func(l ratelimit.Limiter) bool {
		limits := refuses(l, httpmw.WithLimits(func(*http.Request) []ratelimit.Request { return nil }))
		policies := refuses(l, httpmw.WithRules(rules.New(nil)))
		if limits != policies {
			panic("WithLimits and WithRules disagree")
		}
		return limits
	}, false},
	{"Inspector", has[ratelimit.Inspector], func(l ratelimit.Limiter) bool {
		return refuses(l, httpmw.WithLimit(ratelimit.PerSecond(1)), httpmw.WithRefundIf(func(*http.Request, int) bool { return true }))
	}, false},
	{"Settler", has[ratelimit.Settler], func(l ratelimit.Limiter) bool {
		return refuses(l, httpmw.WithLimit(ratelimit.PerSecond(1)), httpmw.WithSettle(func(*http.Request, int) (int, bool) { return 0, false }))
	}, false},
	{"LimitValidator", has[ratelimit.LimitValidator], func(l ratelimit.Limiter) bool {
		// no validator: nothing refuses it at start-up
		return !refuses(l, httpmw.WithLimit(tooLong))
	}, true},
}

// Capabilities are found one way through any wrapper: every backend (local, Redis, a third
// party's without capabilities) × every wrapper (observe.Wrap, fallback with and without a
// secondary, a third party's with Unwrap, and wrappers of wrappers) × every capability,
// through ratelimit.As and through the middleware's checks at construction, answers as the
// bare backend does, and a fallback as its two parts allow: a capability both must have
// (MultiLimiter, Inspector) or one either may give (LimitValidator).
func TestCapabilitiesThroughWrappers(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: deadRedis(t)}) // New does not dial
	t.Cleanup(func() { _ = client.Close() })
	redisLimiter, err := distributed.New(client)
	require.NoError(t, err)
	t.Cleanup(func() { _ = redisLimiter.Close() })
	backends := map[string]func(t *testing.T) ratelimit.Limiter{
		"local":       localLimiter,
		"distributed": func(*testing.T) ratelimit.Limiter { return redisLimiter },
		"third party": func(t *testing.T) ratelimit.Limiter { return hiding{localLimiter(t)} },
	}
	obs := nobody{}
	wrappers := []struct {
		name string
		wrap func(t *testing.T, l ratelimit.Limiter) ratelimit.Limiter
		// second is the backend the wrapper adds as a fallback's secondary, "" for none.
		second string
	}{
		{"bare", func(_ *testing.T, l ratelimit.Limiter) ratelimit.Limiter { return l }, ""},
		{"observe", func(_ *testing.T, l ratelimit.Limiter) ratelimit.Limiter { return observe.Wrap(l, obs, "p") }, ""},
		{"fallback", func(_ *testing.T, l ratelimit.Limiter) ratelimit.Limiter { return fallback.New(l, nil) }, ""},
		{"fallback to local", func(t *testing.T, l ratelimit.Limiter) ratelimit.Limiter {
			return fallback.New(l, localLimiter(t))
		}, "local"},
		{"fallback to a third party", func(t *testing.T, l ratelimit.Limiter) ratelimit.Limiter {
			return fallback.New(l, hiding{localLimiter(t)})
		}, "third party"},
		{"third party", func(_ *testing.T, l ratelimit.Limiter) ratelimit.Limiter { return lending{l} }, ""},
		{"observe of fallback", func(t *testing.T, l ratelimit.Limiter) ratelimit.Limiter {
			return observe.Wrap(fallback.New(l, localLimiter(t)), obs, "p")
		}, "local"},
		{"fallback of observe", func(_ *testing.T, l ratelimit.Limiter) ratelimit.Limiter {
			return fallback.New(observe.Wrap(l, obs, "p"), nil)
		}, ""},
		{"third party of observe of third party", func(_ *testing.T, l ratelimit.Limiter) ratelimit.Limiter {
			return lending{observe.Wrap(lending{l}, obs, "p")}
		}, ""},
	}
	for bname, backend := range backends {
		for _, w := range wrappers {
			for _, c := range capabilityChecks {
				t.Run(fmt.Sprintf("%s/%s/%s", bname, w.name, c.name), func(t *testing.T) {
					bare := backend(t)
					want := c.has(bare)
					if w.second != "" {
						second := c.has(backends[w.second](t))
						want = c.either && (want || second) || want && second
					}
					l := w.wrap(t, bare)
					assert.Equal(t, want, c.has(l), "ratelimit.As")
					assert.Equal(t, !want, c.refused(l), "the middleware's check")
				})
			}
		}
	}
}
