package fallback_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/local"
)

// Limits shared through Redis by the four instances of a service; while Redis is slow or
// down, each instance limits locally to a quarter of each limit, and slog hears about it.
func ExampleNew() {
	client := redis.NewClient(&redis.Options{
		Addr:                  "127.0.0.1:6379",
		ContextTimeoutEnabled: true, // the limiter's 50 ms deadline cuts a stalled read short
	})
	defer client.Close()
	primary, err := distributed.New(client)
	if err != nil {
		log.Fatal(err)
	}
	secondary := local.New()
	defer secondary.Close() // the fallback Limiter closes neither limiter

	logger := slog.Default()
	limiter := fallback.New(primary, secondary,
		fallback.WithInstances(4),
		fallback.WithErrorHandler(func(ctx context.Context, key string, err error) {
			logger.WarnContext(ctx, "rate limit decided locally", "err", err)
		}),
		fallback.WithStateHook(func(c fallback.StateChange) {
			if !c.Edge() {
				return // a probe's open ↔ half-open, four a second while Redis is down
			}
			level := slog.LevelWarn
			if c.Recovered() {
				level = slog.LevelInfo
			}
			logger.Log(context.Background(), level, "rate limiter", "breaker", c)
		}),
	)
	defer limiter.Close()

	// Hand limiter to ginmw.New or the grpcmw interceptors, or call it directly.
	res, err := limiter.Allow(context.Background(), "user:42", ratelimit.PerMinute(100))
	switch {
	case err != nil:
		log.Printf("no decision: %v", err) // bad input only: the secondary answers for Redis
	case !res.Allowed:
		fmt.Printf("limited; retry in %v\n", res.RetryAfter)
	default:
		fmt.Printf("allowed; %d left\n", res.Remaining)
	}
}

// A StateChange logs as a group with log/slog, and prints as a sentence.
func ExampleStateChange() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // no time, so that the output below is stable
			}
			return a
		},
	}))
	opened := fallback.StateChange{From: fallback.Closed, To: fallback.Open, Err: errors.New("distributed: connection refused")}
	closed := fallback.StateChange{From: fallback.HalfOpen, To: fallback.Closed}
	logger.Warn("rate limiter", "breaker", opened)
	logger.Info("rate limiter", "breaker", closed)
	fmt.Println(opened)
	fmt.Println(closed)
	// Output:
	// level=WARN msg="rate limiter" breaker.from=closed breaker.to=open breaker.degraded=true breaker.err="distributed: connection refused"
	// level=INFO msg="rate limiter" breaker.from=half-open breaker.to=closed breaker.degraded=false
	// circuit breaker closed → open (degraded): distributed: connection refused
	// circuit breaker half-open → closed (recovered)
}
