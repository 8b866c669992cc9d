package local_test

import (
	"context"
	"fmt"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/local"
)

// An LLM gateway's tokens per minute: a call is admitted for its estimate, 1000 tokens, and
// settled to what it used once the answer is in. 3000 a minute: a call that used 400 gives
// 600 back; one that used 2500 charges the 1500 it overran. The bucket, 2900 short of full
// (400 + 2500), admits the next estimate of 1000 once it is 2000 short: in 900 tokens, 18 s.
func ExampleLimiter_Settle() {
	limiter := local.New()
	defer limiter.Close()
	ctx := context.Background()
	tpm := ratelimit.PerMinute(3000)
	for _, used := range []int{400, 2500} {
		res, err := limiter.AllowN(ctx, "team:7", tpm, 1000)
		if err != nil || !res.Allowed {
			panic(fmt.Sprint(res, err))
		}
		// ... the call runs, and reports its tokens ...
		if _, err := limiter.Settle(ctx, "team:7", tpm, res.Charge, 1000, used); err != nil {
			panic(err)
		}
	}
	res, _ := limiter.AllowN(ctx, "team:7", tpm, 1000)
	fmt.Println(res.Allowed, res.RetryAfter.Round(1e9))
	// Output: false 18s
}
