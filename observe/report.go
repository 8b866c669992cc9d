package observe

import (
	"context"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/priority"
)

// Call is what a reporter knows of one call to a limiter besides the limiter's answer: the
// fields of a Decision that the caller fixes. Wrap and the middlewares fill one per
// decision and pass it to Report or ReportAll.
type Call struct {
	// Policy names the policy decided; in ReportAll, a Request's Name takes its place.
	Policy string
	// Backend is the limiter's BackendName; Origin.Backend takes its place when set.
	Backend string
	// Origin is what an OriginReporter said of the call; the zero Origin otherwise.
	Origin Origin
	// Shadow marks a decision made in shadow mode.
	Shadow bool
	// Duration is how long the call to the limiter took; negative when it was not timed,
	// which only an observer that is a DurationSampler may be told (see Stopwatch).
	Duration time.Duration
}

// Report tells o of a limiter's answer, res and err, to a call for n tokens under limit
// made for the request whose context is ctx (the caller's own: Classify reads it to tell a
// backend's timeout from the caller's). The Decision's Outcome is OutcomeError with
// Classify's kind when err is not nil, else allowed or denied as res says; its Limit is
// res.Limit when set (fallback's share), limit otherwise; its Priority is the one ctx
// carries. o must not be nil; wrap it with Join to recover its panics.
func Report(ctx context.Context, o Observer, c Call, limit ratelimit.Limit, n int, res ratelimit.Result, err error) {
	var d Decision
	decide(ctx, &d, &c, &limit, n, &res, err)
	o.ObserveDecision(ctx, d)
}

// ReportAll tells o of a limiter's answer, mr and err, to a call of
// ratelimit.MultiLimiter.AllowAll over reqs, made for the request whose context is ctx:
// one Decision per request with a limit (an entry with the zero Limit is skipped), under
// the request's Name (c.Policy when it has none), each saying what AllowN alone would have
// said of it, except that a request denied by one limit is denied by all, since nothing
// was taken from any bucket.
func ReportAll(ctx context.Context, o Observer, c Call, reqs []ratelimit.Request, mr ratelimit.MultiResult, err error) {
	policy := c.Policy
	for i, q := range reqs {
		if q.Limit == (ratelimit.Limit{}) {
			continue
		}
		var res ratelimit.Result
		if i < len(mr.Results) {
			res = mr.Results[i]
		}
		res.Allowed = res.Allowed && mr.Allowed
		c.Policy = policy
		if q.Name != "" {
			c.Policy = q.Name
		}
		var d Decision
		decide(ctx, &d, &c, &q.Limit, max(q.N, 1), &res, err)
		o.ObserveDecision(ctx, d)
	}
}

// decide fills d, zero, with the report of one decision: the one place a Decision is
// made. It takes pointers, as Report's callers are on the hot path: a Decision and its
// parts are a few hundred bytes, which copies would move several times.
func decide(ctx context.Context, d *Decision, c *Call, limit *ratelimit.Limit, n int, res *ratelimit.Result, err error) {
	d.Policy, d.Backend, d.Shadow, d.Cached = c.Policy, c.Backend, c.Shadow, c.Origin.Cached
	d.Cost, d.Priority, d.Duration = n, priority.From(ctx), c.Duration
	if c.Origin.Backend != "" {
		d.Backend = c.Origin.Backend
	}
	if res.Limit == (ratelimit.Limit{}) {
		d.Limit = *limit
	} else {
		d.Limit = res.Limit
	}
	switch {
	case err != nil:
		d.Outcome, d.ErrorKind, d.Err = OutcomeError, Classify(ctx, err), err
	case res.Allowed:
		d.Outcome, d.Remaining = OutcomeAllowed, res.Remaining
	default:
		d.Outcome, d.Remaining = OutcomeDenied, res.Remaining
	}
}

// ReportSettle tells o of a settle (Decision.Settle) of the decision of reserved tokens
// under limit to actual ones, and of the Settler's answer, res and err, as Report tells of
// a decision: error with Classify's kind when err is not nil, else allowed.
func ReportSettle(ctx context.Context, o Observer, c Call, limit ratelimit.Limit, reserved, actual int, res ratelimit.Result, err error) {
	var d Decision
	res.Allowed = err == nil
	decide(ctx, &d, &c, &limit, reserved, &res, err)
	d.Settle, d.Actual = true, actual
	o.ObserveDecision(ctx, d)
}

// ReportReserve tells o of a Reserve (Decision.Reserve) of n tokens under limit and of the
// Reserver's answer, res and err, as Report tells of a decision, with the Delay booked.
func ReportReserve(ctx context.Context, o Observer, c Call, limit ratelimit.Limit, n int, res ratelimit.Result, err error) {
	var d Decision
	decide(ctx, &d, &c, &limit, n, &res, err)
	d.Reserve = true
	if d.Outcome == OutcomeAllowed {
		d.Delay = res.Delay
	}
	o.ObserveDecision(ctx, d)
}
