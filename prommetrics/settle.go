package prommetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-go/ratelimit/observe"
)

// The series of settles and bookings ahead (observe.Decision's Settle and Reserve), as
// otelmetrics names them; ratelimit_requests_total does not count them.
var (
	settlesDesc = prometheus.NewDesc("ratelimit_settles_total",
		"Settles of a cost known after the fact, by policy and result: settled, or refused or not made.",
		[]string{"ratelimit_policy", "ratelimit_result"}, nil)
	settleErrorsDesc = prometheus.NewDesc("ratelimit_settles_total",
		"Settles of a cost known after the fact, by policy and result: settled, or refused or not made.",
		[]string{"error_type", "ratelimit_policy", "ratelimit_result"}, nil)
	reservationsDesc = prometheus.NewDesc("ratelimit_reservations_total",
		"Slots booked ahead, by policy and result: booked, none within the wait, or not decided.",
		[]string{"ratelimit_policy", "ratelimit_result"}, nil)
	reservationErrorsDesc = prometheus.NewDesc("ratelimit_reservations_total",
		"Slots booked ahead, by policy and result: booked, none within the wait, or not decided.",
		[]string{"error_type", "ratelimit_policy", "ratelimit_result"}, nil)
	settleTokensDesc = prometheus.NewDesc("ratelimit_settle_tokens_total",
		"Tokens settles charged past the estimate (overrun) or gave back (refund), by policy.",
		[]string{"ratelimit_policy", "ratelimit_settle_direction"}, nil)
	reserveDelayDesc = prometheus.NewDesc("ratelimit_reserve_delay_seconds_total",
		"Time booked ahead by the slots reserved, summed, by policy.",
		[]string{"ratelimit_policy"}, nil)
)

// amounts holds one (policy, backend) pair's settled tokens and booked delay.
type amounts struct {
	observe.Amounts
	policy string
}

// of returns a's policy and amounts, for observe.SumAmounts.
func (a *amounts) of() (string, *observe.Amounts) { return a.policy, &a.Amounts }

// observeSettle counts d, a settle or a booking (Decision.Settle or Decision.Reserve).
func (c *Collector) observeSettle(d observe.Decision) {
	if d.Settle {
		c.settles.Lookup(d.Policy, d.Backend).cells[observe.PermitCellOf(d)].Add(1)
	} else {
		c.reserves.Lookup(d.Policy, d.Backend).cells[observe.PermitCellOf(d)].Add(1)
	}
	if d.Outcome == observe.OutcomeAllowed {
		c.amounts.Lookup(d.Policy, d.Backend).Count(d)
	}
}

// collectSettles sends the series of settles and bookings that have counted something.
func (c *Collector) collectSettles(ch chan<- prometheus.Metric) {
	collectOutcomes(ch, c.settles, settlesDesc, settleErrorsDesc)
	collectOutcomes(ch, c.reserves, reservationsDesc, reservationErrorsDesc)
	observe.SumAmounts(c.amounts, (*amounts).of, func(_ *amounts, policy string, sum observe.AmountSums) {
		if sum.Overrun > 0 {
			ch <- prometheus.MustNewConstMetric(settleTokensDesc, prometheus.CounterValue, float64(sum.Overrun), policy, "overrun")
		}
		if sum.Refund > 0 {
			ch <- prometheus.MustNewConstMetric(settleTokensDesc, prometheus.CounterValue, float64(sum.Refund), policy, "refund")
		}
		if sum.Delay > 0 {
			ch <- prometheus.MustNewConstMetric(reserveDelayDesc, prometheus.CounterValue, sum.Delay.Seconds(), policy)
		}
	})
}
