package prommetrics

import (
	"sync/atomic"

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
	policy                 string
	overrun, refund, delay atomic.Int64 // tokens, tokens, µs
}

// observeSettle counts d, a settle or a booking (Decision.Settle or Decision.Reserve).
func (c *Collector) observeSettle(d observe.Decision) {
	if d.Settle {
		c.settles.Lookup(d.Policy, d.Backend).cells[observe.PermitCellOf(d)].Add(1)
	} else {
		c.reserves.Lookup(d.Policy, d.Backend).cells[observe.PermitCellOf(d)].Add(1)
	}
	if d.Outcome != observe.OutcomeAllowed {
		return
	}
	a := c.amounts.Lookup(d.Policy, d.Backend)
	switch {
	case d.Reserve:
		a.delay.Add(d.Delay.Microseconds())
	case d.Actual > d.Cost:
		a.overrun.Add(int64(d.Actual - d.Cost))
	case d.Actual < d.Cost:
		a.refund.Add(int64(d.Cost - d.Actual))
	}
}

// collectSettles sends the series of settles and bookings that have counted something.
func (c *Collector) collectSettles(ch chan<- prometheus.Metric) {
	collectOutcomes(ch, c.settles, settlesDesc, settleErrorsDesc)
	collectOutcomes(ch, c.reserves, reservationsDesc, reservationErrorsDesc)
	type sums struct{ overrun, refund, delay int64 }
	byPolicy := make(map[string]*sums)
	c.amounts.All(func(a *amounts) {
		sum := byPolicy[a.policy]
		if sum == nil {
			sum = new(sums)
			byPolicy[a.policy] = sum
		}
		sum.overrun += a.overrun.Load()
		sum.refund += a.refund.Load()
		sum.delay += a.delay.Load()
	})
	for policy, sum := range byPolicy {
		if sum.overrun > 0 {
			ch <- prometheus.MustNewConstMetric(settleTokensDesc, prometheus.CounterValue, float64(sum.overrun), policy, "overrun")
		}
		if sum.refund > 0 {
			ch <- prometheus.MustNewConstMetric(settleTokensDesc, prometheus.CounterValue, float64(sum.refund), policy, "refund")
		}
		if sum.delay > 0 {
			ch <- prometheus.MustNewConstMetric(reserveDelayDesc, prometheus.CounterValue, float64(sum.delay)/1e6, policy)
		}
	}
}
