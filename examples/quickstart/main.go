// Command quickstart plays two timelines against the in-process limiter and prints each
// decision: the example of the token bucket and GCRA tables (Rate 1/s, Burst 2), then a
// burst of twelve requests against PerSecond(5) followed by a pause. It needs no Redis.
//
// The limiter reads a simulated clock (local.WithClock), so the program runs instantly and
// prints the same table every time:
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/local"
)

// request is one line of a timeline: a request sent at an offset from the start.
type request struct {
	name string
	at   time.Duration
}

func main() {
	ms := time.Millisecond
	play("Worked example: Rate 1/s, Burst 2 (a full bucket holds 2 tokens)",
		ratelimit.Limit{Rate: 1, Burst: 2},
		[]request{{"A", 100 * ms}, {"B", 100 * ms}, {"C", 100 * ms}, {"D", 1500 * ms}})

	burst := make([]request, 0, 14)
	for i := range 12 {
		burst = append(burst, request{fmt.Sprintf("r%d", i+1), 0})
	}
	burst = append(burst, request{"r13", 200 * ms}, request{"r14", time.Second})
	play("Burst: PerSecond(5), twelve requests at once, then two late ones",
		ratelimit.PerSecond(5), burst)
}

// play sends the requests of one timeline to a fresh limiter and prints a table.
func play(title string, limit ratelimit.Limit, requests []request) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start
	limiter := local.New(local.WithClock(func() time.Time { return now }))
	defer limiter.Close()

	fmt.Printf("%s\n\n", title)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "request\tat\tdecision\tremaining\tretry after\treset after\t")
	for _, r := range requests {
		now = start.Add(r.at)
		res, err := limiter.Allow(context.Background(), "client-1", limit)
		if err != nil {
			fmt.Fprintln(os.Stderr, "quickstart:", err)
			os.Exit(1)
		}
		decision, retry := "allowed", "-"
		if !res.Allowed {
			decision, retry = "DENIED", res.RetryAfter.String()
		}
		fmt.Fprintf(w, "%s\t%v\t%s\t%d\t%s\t%v\t\n",
			r.name, r.at, decision, res.Remaining, retry, res.ResetAfter)
	}
	w.Flush()
	fmt.Println()
}
