package pipeline_test

import (
	"context"
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

// TestSettleHolds: with WithSettle on the Redis backend, alone or as fallback's primary, a
// request's estimate is held (a reservation in flight, in the bucket's holds key) while its
// handler runs, and the settle ends the hold. A token an hour, Burst 100, estimates of 10.
// A request that costs 30 is held while it runs (90 left, its header says), then settled:
// no hold left, 70 in the bucket. The next, whose settle function gives nothing, is decided
// with 60 left and keeps its estimate, its hold ended. One whose handler panics (50 left) is
// never settled: its hold stays, to be given back when it expires, within HoldTTL; the next
// is decided with 40 left.
func TestSettleHolds(t *testing.T) {
	server := redistest.NewServer(t)
	limit := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 100}
	for _, through := range []string{"distributed", "fallback"} {
		t.Run(through, func(t *testing.T) {
			ctx := context.Background()
			client := redis.NewClient(&redis.Options{Addr: server.Addr()})
			t.Cleanup(func() { _ = client.Close() })
			prefix := "holds-" + through + ":"
			redisL, err := distributed.New(client, distributed.WithPrefix(prefix), distributed.WithTimeout(time.Minute))
			require.NoError(t, err)
			t.Cleanup(func() { _ = redisL.Close() })
			var l ratelimit.Limiter = redisL
			if through == "fallback" {
				l = fallback.New(redisL, localLimiter(t))
			}
			holds := func() []string {
				t.Helper()
				keys, err := client.Keys(ctx, "*"+prefix+"*:holds").Result()
				require.NoError(t, err)
				var members []string
				for _, k := range keys {
					m, err := client.ZRange(ctx, k, 0, -1).Result()
					require.NoError(t, err)
					members = append(members, m...)
				}
				return members
			}
			var inFlight []string // the holds the handler saw
			done := make(chan struct{}, 1)
			mw := httpmw.New(l, httpmw.WithLimit(limit), httpmw.WithHeaderStyle(headers.StyleXRateLimit),
				httpmw.WithKeyFunc(func(*http.Request) (string, error) { return "user", nil }),
				httpmw.WithCostFunc(func(*http.Request) int { return 10 }),
				httpmw.WithSettle(func(r *http.Request, _ int) (int, bool) {
					actual, err := strconv.Atoi(r.Header.Get("X-Actual"))
					return actual, err == nil
				}),
				httpmw.WithErrorHandler(func(_ http.ResponseWriter, _ *http.Request, err error) bool {
					t.Errorf("error handler: %v", err)
					return false
				}))
			h := mw(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				inFlight = holds()
				if r.Header.Get("X-Panic") != "" {
					panic(http.ErrAbortHandler) // ends the request without a log line
				}
			}))
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer func() { done <- struct{}{} }()
				h.ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close)
			send := func(header, value string) (remaining string) {
				t.Helper()
				// A POST, which the client sends once: a GET whose connection closes with no
				// answer (the panic) it would send again.
				req, err := http.NewRequest(http.MethodPost, srv.URL, http.NoBody)
				require.NoError(t, err)
				if header != "" {
					req.Header.Set(header, value)
				}
				if resp, err := srv.Client().Do(req); err == nil {
					remaining = resp.Header.Get("X-RateLimit-Remaining")
					_ = resp.Body.Close()
				}
				<-done
				return remaining
			}

			require.Equal(t, "90", send("X-Actual", "30"))
			require.Len(t, inFlight, 1, "the estimate held while the handler runs")
			require.Empty(t, holds(), "the settle ended the hold")

			require.Equal(t, "60", send("", ""), "the overrun charged")
			require.Len(t, inFlight, 1)
			require.Empty(t, holds(), "no settle: the hold ended all the same")

			send("X-Panic", "1")
			require.Len(t, inFlight, 1)
			require.Len(t, holds(), 1, "never settled: held until it expires")
			keys, err := client.Keys(ctx, "*"+prefix+"*:holds").Result()
			require.NoError(t, err)
			require.Len(t, keys, 1)
			ttl, err := client.PTTL(ctx, keys[0]).Result()
			require.NoError(t, err)
			require.Greater(t, ttl, pipeline.HoldTTL-time.Minute, "kept as long as the hold")
			require.Equal(t, "40", send("X-Actual", "10"), "the estimate kept, and the panicked one held")
		})
	}
}
