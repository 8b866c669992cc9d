package bench

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/local"
)

// settleLimit is a bucket that neither fills nor reaches its debt bound within a run: drained
// half of 10⁹ tokens before the timer, it refills 10⁶ a second, and each call moves it by
// one token.
var settleLimit = ratelimit.Limit{Rate: 1e6, Burst: 1e9}

// settleOps are the calls BenchmarkSettle times on one bucket: a Refund of one token, the
// floor a settle is measured against; a settle's underrun of one (a refund), its overrun of
// one (a debit), and for Redis AllowN, a decision's cost, and a Hold settled with an overrun
// of one (WithSettle's two scripts a request).
func settleOps(l ratelimit.Limiter) map[string]func(ctx context.Context) error {
	ins, _ := ratelimit.As[ratelimit.Inspector](l)
	s, _ := ratelimit.As[ratelimit.Settler](l)
	return map[string]func(ctx context.Context) error{
		"refund": func(ctx context.Context) error {
			_, err := ins.Refund(ctx, "k", settleLimit, 1, ratelimit.Charge{})
			return err
		},
		"underrun": func(ctx context.Context) error {
			_, err := s.Settle(ctx, "k", settleLimit, ratelimit.Charge{}, 2, 1)
			return err
		},
		"overrun": func(ctx context.Context) error {
			_, err := s.Settle(ctx, "k", settleLimit, ratelimit.Charge{}, 1, 2)
			return err
		},
		"allow": func(ctx context.Context) error {
			_, err := l.AllowN(ctx, "k", settleLimit, 1)
			return err
		},
		"hold+settle": func(ctx context.Context) error {
			h, _ := ratelimit.As[ratelimit.Settler](l)
			res, err := h.Hold(ctx, "k", settleLimit, 1, time.Minute)
			if err != nil {
				return err
			}
			_, err = s.Settle(ctx, "k", settleLimit, res.Charge, 1, 2)
			return err
		},
	}
}

// BenchmarkSettle times a settle beside a Refund on the local backend and beside a Refund and
// an AllowN on Redis (one script each), serially, on one bucket.
func BenchmarkSettle(b *testing.B) {
	ctx := context.Background()
	run := func(b *testing.B, l ratelimit.Limiter) {
		if res, err := l.AllowN(ctx, "k", settleLimit, settleLimit.Burst/2); err != nil || !res.Allowed {
			b.Fatalf("draining the bucket: %+v, %v", res, err)
		}
		ops := settleOps(l)
		for _, name := range []string{"refund", "underrun", "overrun", "allow", "hold+settle"} {
			if _, holds := ratelimit.As[ratelimit.Settler](l); name == "hold+settle" && !holds {
				continue
			}
			op := ops[name]
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := op(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	b.Run("local", func(b *testing.B) {
		l := local.New()
		b.Cleanup(func() { _ = l.Close() })
		run(b, l)
	})
	b.Run("redis", func(b *testing.B) {
		srv := redistest.NewServer(b)
		pinRedis(b, srv)
		client := newRedisClient(srv.Addr())
		b.Cleanup(func() { client.Close() })
		// A second's timeout: a loaded VM stalls past the default 50 ms.
		l, err := distributed.New(client, distributed.WithTimeout(time.Second))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = l.Close() })
		run(b, l)
	})
}
