package pipeline_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/headers"
	"github.com/sluice-go/ratelimit/httpmw"
	"github.com/sluice-go/ratelimit/internal/pipeline"
	"github.com/sluice-go/ratelimit/internal/redistest"
)

// settleStep is one request of TestSettleCross: its estimate (its cost) and actual cost,
// whether its handler fails (500, which WithRefundIf refunds), and what it must get: the
// status and the X-RateLimit-Remaining and Retry-After headers ("" for none).
type settleStep struct {
	cost, actual int
	fail         bool
	status       int
	remaining    string
	retry        string
}

// TestSettleCross: WithSettle × WithRefundIf × fallback (healthy: the primary holds and
// settles; degraded: the secondary decides, and is settled, never the dead primary) × shadow
// × several limits, on the local backend and on Redis (one limit held: ratelimit.Settler's Hold).
// A token an hour, Burst 100 (and 200 for the second limit, never binding), so nothing
// refills. Enforced: a request estimated at 10 (90 left, the header says) that
// costs 30 leaves 70; one that costs 5, 65 (60, then 65); a failed one is refunded, not
// settled (55, then 65); 65 pass, 0 left; one more is denied, an hour away. From a fresh
// key, a request of 10 that costs 150 leaves the bucket 50 in debt, and the next, of 10,
// waits until the bucket is 10 short of 100: 60 tokens, 60 hours, the Retry-After. Shadow:
// every request passes, the headers counting as enforcement would.
func TestSettleCross(t *testing.T) {
	// Of decisions, not of their speed: no Redis call may time out on a loaded machine.
	t.Cleanup(pipeline.SetShadowBudget(time.Minute))
	server := redistest.NewServer(t)
	const hour = 3600
	limit := ratelimit.Limit{Rate: 1.0 / hour, Burst: 100}
	wide := ratelimit.Limit{Rate: 1.0 / hour, Burst: 200}
	backends := map[string]func(t *testing.T) ratelimit.Limiter{
		"local": localLimiter,
		"redis": func(t *testing.T) ratelimit.Limiter {
			client := redis.NewClient(&redis.Options{Addr: server.Addr()})
			t.Cleanup(func() { _ = client.Close() })
			l, err := distributed.New(client, distributed.WithPrefix(fmt.Sprintf("settle-%s:", t.Name())), distributed.WithTimeout(time.Minute))
			require.NoError(t, err)
			t.Cleanup(func() { _ = l.Close() })
			return l
		},
		"fallback healthy": func(t *testing.T) ratelimit.Limiter {
			// The primary answers, holding each estimate until its settle (the Settler's Hold).
			client := redis.NewClient(&redis.Options{Addr: server.Addr()})
			t.Cleanup(func() { _ = client.Close() })
			primary, err := distributed.New(client, distributed.WithPrefix(fmt.Sprintf("settle-%s:", t.Name())), distributed.WithTimeout(time.Minute))
			require.NoError(t, err)
			l := fallback.New(primary, localLimiter(t))
			t.Cleanup(func() { _ = l.Close() })
			return l
		},
		"fallback degraded": func(t *testing.T) ratelimit.Limiter {
			client := redis.NewClient(&redis.Options{Addr: deadRedis(t)})
			t.Cleanup(func() { _ = client.Close() })
			dead, err := distributed.New(client)
			require.NoError(t, err)
			l := fallback.New(dead, localLimiter(t))
			// Open the breaker, so that the secondary answers at once (a shadow decision
			// that takes longer than its budget is not waited for).
			for range fallback.DefaultFailureThreshold {
				_, err := l.Allow(context.Background(), "warm", limit)
				require.NoError(t, err)
			}
			require.Equal(t, fallback.Open, l.State())
			return l
		},
	}
	enforced := []settleStep{
		{cost: 10, actual: 30, status: 200, remaining: "90"},
		{cost: 10, actual: 5, status: 200, remaining: "60"},
		{cost: 10, actual: 50, fail: true, status: 500, remaining: "55"},
		{cost: 65, actual: 65, status: 200, remaining: "0"},
		{cost: 1, actual: 1, status: 429, remaining: "0", retry: strconv.Itoa(hour)},
	}
	shadowed := []settleStep{
		{cost: 10, actual: 30, status: 200, remaining: "90"},
		{cost: 10, actual: 5, status: 200, remaining: "60"},
		{cost: 10, actual: 50, fail: true, status: 500, remaining: "55"},
		{cost: 65, actual: 65, status: 200, remaining: "0"},
		{cost: 1, actual: 1, status: 200, remaining: "0"},
	}
	debt := []settleStep{
		{cost: 10, actual: 150, status: 200, remaining: "90"},
		{cost: 10, actual: 10, status: 429, remaining: "0", retry: strconv.Itoa(60 * hour)},
	}
	for name, backend := range backends {
		for _, multi := range []bool{false, true} {
			for _, shadow := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/multi=%t/shadow=%t", name, multi, shadow), func(t *testing.T) {
					l := backend(t)
					opts := []httpmw.Option{
						httpmw.WithSettle(func(r *http.Request, _ int) (int, bool) {
							actual, err := strconv.Atoi(r.Header.Get("X-Actual"))
							return actual, err == nil
						}),
						httpmw.WithRefundIf(func(_ *http.Request, status int) bool { return status == 500 }),
						httpmw.WithHeaderStyle(headers.StyleXRateLimit),
						httpmw.WithErrorHandler(func(_ http.ResponseWriter, _ *http.Request, err error) bool {
							t.Errorf("error handler: %v", err)
							return false
						}),
					}
					cost := func(r *http.Request) int { n, _ := strconv.Atoi(r.Header.Get("X-Cost")); return n }
					if multi {
						opts = append(opts, httpmw.WithLimits(func(r *http.Request) []ratelimit.Request {
							key := r.Header.Get("X-Key")
							return []ratelimit.Request{
								{Key: key, Limit: limit, N: cost(r), Name: "narrow"},
								{Key: key, Limit: wide, N: cost(r), Name: "wide"},
							}
						}))
					} else {
						opts = append(opts, httpmw.WithLimit(limit), httpmw.WithCostFunc(cost),
							httpmw.WithKeyFunc(func(r *http.Request) (string, error) { return r.Header.Get("X-Key"), nil }))
					}
					if shadow {
						opts = append(opts, httpmw.WithShadow())
					}
					srv := httptest.NewServer(httpmw.New(l, opts...)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						if r.Header.Get("X-Fail") != "" {
							w.WriteHeader(500)
						}
					})))
					t.Cleanup(srv.Close)
					play := func(key string, steps []settleStep) {
						for i, s := range steps {
							req, err := http.NewRequest("GET", srv.URL, nil)
							require.NoError(t, err)
							req.Header.Set("X-Key", key)
							req.Header.Set("X-Cost", strconv.Itoa(s.cost))
							req.Header.Set("X-Actual", strconv.Itoa(s.actual))
							if s.fail {
								req.Header.Set("X-Fail", "1")
							}
							resp, err := srv.Client().Do(req)
							require.NoError(t, err)
							_ = resp.Body.Close()
							require.Equal(t, s.status, resp.StatusCode, "%s step %d", key, i+1)
							require.Equal(t, s.remaining, resp.Header.Get("X-RateLimit-Remaining"), "%s step %d", key, i+1)
							require.Equal(t, s.retry, resp.Header.Get("Retry-After"), "%s step %d", key, i+1)
						}
					}
					if shadow {
						play("a", shadowed)
						return
					}
					play("a", enforced)
					play("b", debt)
				})
			}
		}
	}
}
