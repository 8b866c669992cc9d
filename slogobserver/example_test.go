package slogobserver_test

import (
	"context"
	"log/slog"
	"os"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/slogobserver"
)

// The third request under Rate 1/s, Burst 2 is denied, and logged (without the time, so
// that the output is the same on every run). The allowed ones are not logged.
func ExampleNew() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "duration" {
				return slog.Attr{}
			}
			return a
		},
	}))
	limiter := observe.Wrap(local.New(), slogobserver.New(logger), "api")
	defer limiter.Close()
	for range 3 {
		limiter.Allow(context.Background(), "client", ratelimit.Limit{Rate: 1, Burst: 2})
	}
	// Output:
	// level=INFO msg="rate limit: request denied" policy=api backend=local shadow=false cost=1 priority=critical limit="1/s burst 2" remaining=0
}
