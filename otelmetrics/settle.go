package otelmetrics

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sluice-go/ratelimit/observe"
)

// attrDirection says which way a settle moved tokens: "overrun" (charged past the
// estimate) or "refund" (given back).
const attrDirection = "ratelimit.settle.direction"

// amounts holds one (policy, backend) pair's settled tokens and booked delay, and their
// attribute sets.
type amounts struct {
	observe.Amounts
	policy                  string
	overrunA, refundA, polA metric.ObserveOption
}

func newAmounts(policy, _ string) *amounts {
	p := attribute.String(attrPolicy, policy)
	return &amounts{
		policy:   policy,
		overrunA: metric.WithAttributeSet(attribute.NewSet(p, attribute.String(attrDirection, "overrun"))),
		refundA:  metric.WithAttributeSet(attribute.NewSet(p, attribute.String(attrDirection, "refund"))),
		polA:     metric.WithAttributeSet(attribute.NewSet(p)),
	}
}

// registerSettles makes the instruments of settles and bookings ahead (observe.Decision's
// Settle and Reserve), which ratelimit.requests does not count: ratelimit.settles and
// ratelimit.reservations by policy and result, ratelimit.settle.tokens by policy and
// direction, and ratelimit.reserve.delay, the time booked ahead, by policy.
func (o *Observer) registerSettles(meter metric.Meter, maxSeries int) error {
	var errs [5]error
	o.settles, o.settleCalls, errs[0] = registerOutcomes(meter, maxSeries, "ratelimit.settles", "{call}",
		"Settles of a cost known after the fact, by policy and result: settled, or refused or not made.")
	o.reserves, o.reserveCalls, errs[1] = registerOutcomes(meter, maxSeries, "ratelimit.reservations", "{call}",
		"Slots booked ahead, by policy and result: booked, none within the wait, or not decided.")
	o.amounts = observe.NewSeries(maxSeries, newAmounts)
	tokens, err := meter.Int64ObservableCounter("ratelimit.settle.tokens", metric.WithUnit("{token}"),
		metric.WithDescription("Tokens settles charged past the estimate (overrun) or gave back (refund), by policy."))
	errs[2] = err
	delay, err := meter.Float64ObservableCounter("ratelimit.reserve.delay", metric.WithUnit("s"),
		metric.WithDescription("Time booked ahead by the slots reserved, summed, by policy."))
	errs[3] = err
	if errs[2] == nil && errs[3] == nil {
		_, errs[4] = meter.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
			observe.SumAmounts(o.amounts, (*amounts).of, func(a *amounts, _ string, sum observe.AmountSums) {
				if sum.Overrun > 0 {
					obs.ObserveInt64(tokens, sum.Overrun, a.overrunA)
				}
				if sum.Refund > 0 {
					obs.ObserveInt64(tokens, sum.Refund, a.refundA)
				}
				if sum.Delay > 0 {
					obs.ObserveFloat64(delay, sum.Delay.Seconds(), a.polA)
				}
			})
			return nil
		}, tokens, delay)
	}
	return errors.Join(errs[:]...)
}

// observeSettle counts d, a settle or a booking (Decision.Settle or Decision.Reserve).
func (o *Observer) observeSettle(d observe.Decision) {
	if d.Settle {
		o.settles.Lookup(d.Policy, d.Backend).cells[observe.PermitCellOf(d)].n.Add(1)
	} else {
		o.reserves.Lookup(d.Policy, d.Backend).cells[observe.PermitCellOf(d)].n.Add(1)
	}
	if d.Outcome == observe.OutcomeAllowed {
		o.amounts.Lookup(d.Policy, d.Backend).Count(d)
	}
}

// of returns a's policy and amounts, for observe.SumAmounts.
func (a *amounts) of() (string, *observe.Amounts) { return a.policy, &a.Amounts }
