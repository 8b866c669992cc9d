package headers_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/headers"
)

// The fields of a denial under PerMinute(2) in each style: the bucket is empty, a token
// comes back in 30 s, and the bucket is full again in 60 s.
func ExampleFields() {
	denied := ratelimit.Result{Limit: ratelimit.PerMinute(2), RetryAfter: 30 * time.Second, ResetAfter: time.Minute}
	for _, style := range []headers.Style{headers.StyleXRateLimit, headers.StyleIETF} {
		fmt.Println(style)
		for _, f := range headers.Fields(style, "api", denied) {
			fmt.Printf("  %s: %s\n", f.Name, f.Value)
		}
	}
	// Output:
	// StyleXRateLimit
	//   Retry-After: 30
	//   X-RateLimit-Limit: 2
	//   X-RateLimit-Remaining: 0
	//   X-RateLimit-Reset: 60
	// StyleIETF
	//   Retry-After: 30
	//   RateLimit-Policy: "api";q=2;w=60
	//   RateLimit: "api";r=0;t=30
}

// Set writes the same fields into an http.Header, for handlers that limit by hand.
func ExampleSet() {
	h := http.Header{}
	headers.Set(h, headers.StyleXRateLimit, "", ratelimit.Result{
		Allowed: true, Limit: ratelimit.PerSecond(10), Remaining: 9, ResetAfter: 100 * time.Millisecond})
	fmt.Println(h.Get("X-RateLimit-Remaining"), h.Get("X-RateLimit-Reset"))
	// Output: 9 1
}
