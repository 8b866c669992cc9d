package observe_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sluice-go/ratelimit/observe"
)

type amountSeries struct {
	observe.Amounts
	policy, backend string
}

func (a *amountSeries) of() (string, *observe.Amounts) { return a.policy, &a.Amounts }

// TestSumAmounts: settles count their overrun or refund, bookings their delay, anything
// else nothing; a policy's series are summed across backends, and an all-zero policy is
// left out.
func TestSumAmounts(t *testing.T) {
	s := observe.NewSeries(8, func(policy, backend string) *amountSeries {
		return &amountSeries{policy: policy, backend: backend}
	})
	settle := func(policy, backend string, cost, actual int, outcome observe.Outcome) {
		s.Lookup(policy, backend).Count(observe.Decision{Settle: true, Cost: cost, Actual: actual, Outcome: outcome})
	}
	settle("api", "redis", 10, 25, observe.OutcomeAllowed)  // overrun 15
	settle("api", "local", 10, 4, observe.OutcomeAllowed)   // refund 6
	settle("api", "redis", 10, 3, observe.OutcomeAllowed)   // refund 7
	settle("api", "redis", 10, 90, observe.OutcomeDenied)   // refused: nothing
	settle("api", "redis", 10, 10, observe.OutcomeAllowed)  // exact: nothing
	settle("idle", "redis", 10, 10, observe.OutcomeAllowed) // nothing: left out
	s.Lookup("api", "redis").Count(observe.Decision{Reserve: true, Delay: 1500 * time.Microsecond, Outcome: observe.OutcomeAllowed})
	s.Lookup("jobs", "redis").Count(observe.Decision{Reserve: true, Delay: time.Second, Outcome: observe.OutcomeAllowed})
	// A request, neither a settle nor a booking, counts nothing.
	s.Lookup("jobs", "redis").Count(observe.Decision{Cost: 1, Actual: 9, Outcome: observe.OutcomeAllowed})
	got := map[string]observe.AmountSums{}
	observe.SumAmounts(s, (*amountSeries).of, func(first *amountSeries, policy string, sums observe.AmountSums) {
		assert.Equal(t, policy, first.policy)
		got[policy] = sums
	})
	assert.Equal(t, map[string]observe.AmountSums{
		"api":  {Overrun: 15, Refund: 13, Delay: 1500 * time.Microsecond},
		"jobs": {Delay: time.Second},
	}, got)
}
