package observe

import (
	"context"
	"fmt"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/nilarg"
)

// Wrap returns l reporting each of its decisions to o: each Allow and AllowN as a Decision
// with Policy set to policy, Backend to BackendName(l) (or, when l is an OriginReporter
// such as fallback.Limiter, the backend that decided), Cost to n, Priority to the priority
// ctx carries and Duration to the time the call to l took (for a DurationSampler, one call
// in its n is timed: see Stopwatch); and, when l is a ratelimit.MultiLimiter, each AllowAll
// as ReportAll does, one Decision per limit under its Request's Name (policy for one
// without). Wait, Peek, Refund and Reset pass through unobserved: how long a caller waited
// is not how long a decision took, and the others decide nothing.
//
// The Limiter Wrap returns has exactly the optional interfaces of l among
// ratelimit.MultiLimiter, ratelimit.Inspector, ratelimit.LimitValidator and
// OriginReporter: an observed local.Limiter still decides several limits at once and
// refunds, an observed limiter that cannot refund is not an Inspector. It is a
// BackendNamer, named as l, and has an Unwrap method that returns l. It is safe for
// concurrent use.
//
// Wrap is for code that calls a Limiter directly; the middlewares take an Observer of
// their own (WithObserver), and wrapping the Limiter they are given as well reports each
// decision twice. A panic in o is recovered (see Join): the call returns l's answer all
// the same. Wrap panics if l or o is nil or holds a nil pointer.
func Wrap(l ratelimit.Limiter, o Observer, policy string) ratelimit.Limiter {
	if nilarg.Is(l) {
		panic("observe: Wrap: nil Limiter")
	}
	obs := Join(o)
	if obs == nil {
		panic("observe: Wrap: nil Observer")
	}
	w := &observed{limiter: l, obs: obs, one: obs, policy: policy, backend: BackendName(l), clock: NewStopwatch(obs)}
	if s, ok := obs.(*safeObserver); ok {
		w.one = s.Observer
	}
	w.multi, _ = l.(ratelimit.MultiLimiter)
	w.origins, _ = l.(OriginReporter)
	return expose(w, capabilitiesOf(l))
}

// observed is the Limiter Wrap returns, before expose hides the capabilities its limiter
// lacks.
type observed struct {
	limiter ratelimit.Limiter
	multi   ratelimit.MultiLimiter // limiter, if it decides several limits
	origins OriginReporter         // limiter, if it reports origins
	obs     Observer               // wrapped by Join: panics recovered
	// one is obs's only observer when Join made obs of one, else obs. AllowN tells it of
	// its decision through observeDecision, which recovers its panics as obs would, and
	// spares the Decision a copy and a call through obs.
	one     Observer
	policy  string
	backend string
	clock   *Stopwatch
}

var _ full = (*observed)(nil)

func (l *observed) Allow(ctx context.Context, key string, limit ratelimit.Limit) (ratelimit.Result, error) {
	var res ratelimit.Result
	_, err := l.allowN(ctx, key, &limit, 1, &res)
	return res, err
}

func (l *observed) AllowN(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, error) {
	var res ratelimit.Result
	_, err := l.allowN(ctx, key, &limit, n, &res)
	return res, err
}

func (l *observed) AllowNOrigin(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, Origin, error) {
	var res ratelimit.Result
	org, err := l.allowN(ctx, key, &limit, n, &res)
	return res, org, err
}

// allowN is AllowNOrigin with the answer in *res: one body for the three, which pass a
// Result and a Limit, each several words, by pointer rather than copying them from call to
// call.
func (l *observed) allowN(ctx context.Context, key string, limit *ratelimit.Limit, n int, res *ratelimit.Result) (Origin, error) {
	start := l.clock.Start()
	var (
		org Origin
		err error
	)
	if l.origins != nil {
		*res, org, err = l.origins.AllowNOrigin(ctx, key, *limit, n)
	} else {
		*res, err = l.limiter.AllowN(ctx, key, *limit, n)
	}
	c := Call{Policy: l.policy, Backend: l.backend, Origin: org, Duration: l.clock.Stop(start)}
	var d Decision
	decide(ctx, &d, &c, limit, n, res, err)
	observeDecision(ctx, l.one, &d)
	return org, err
}

func (l *observed) AllowAll(ctx context.Context, reqs []ratelimit.Request) (ratelimit.MultiResult, error) {
	mr, _, err := l.AllowAllOrigin(ctx, reqs)
	return mr, err
}

func (l *observed) AllowAllOrigin(ctx context.Context, reqs []ratelimit.Request) (ratelimit.MultiResult, Origin, error) {
	if l.multi == nil {
		return ratelimit.MultiResult{}, Origin{}, fmt.Errorf("%w: AllowAll: %s", ratelimit.ErrNotSupported, l.backend)
	}
	start := l.clock.Start()
	var (
		mr  ratelimit.MultiResult
		org Origin
		err error
	)
	if l.origins != nil {
		mr, org, err = l.origins.AllowAllOrigin(ctx, reqs)
	} else {
		mr, err = l.multi.AllowAll(ctx, reqs)
	}
	c := Call{Policy: l.policy, Backend: l.backend, Origin: org, Duration: l.clock.Stop(start)}
	ReportAll(ctx, l.obs, c, reqs, mr, err)
	return mr, org, err
}

func (l *observed) Peek(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, error) {
	ins, err := l.inspector()
	if err != nil {
		return ratelimit.Result{}, err
	}
	return ins.Peek(ctx, key, limit, n)
}

func (l *observed) Refund(ctx context.Context, key string, limit ratelimit.Limit, n int, c ratelimit.Charge) (ratelimit.Result, error) {
	ins, err := l.inspector()
	if err != nil {
		return ratelimit.Result{}, err
	}
	return ins.Refund(ctx, key, limit, n, c)
}

func (l *observed) Reset(ctx context.Context, key string, limit ratelimit.Limit) error {
	ins, err := l.inspector()
	if err != nil {
		return err
	}
	return ins.Reset(ctx, key, limit)
}

// inspector returns the limiter's Inspector. expose shows Peek, Refund and Reset only for
// a limiter that has one: the error is for callers of observed itself.
func (l *observed) inspector() (ratelimit.Inspector, error) {
	if ins, ok := l.limiter.(ratelimit.Inspector); ok {
		return ins, nil
	}
	return nil, fmt.Errorf("%w: %s cannot inspect buckets", ratelimit.ErrNotSupported, l.backend)
}

func (l *observed) ValidateLimit(limit ratelimit.Limit) error {
	if v, ok := l.limiter.(ratelimit.LimitValidator); ok {
		return v.ValidateLimit(limit)
	}
	return limit.Validate()
}

func (l *observed) Wait(ctx context.Context, key string, limit ratelimit.Limit) error {
	return l.limiter.Wait(ctx, key, limit)
}

func (l *observed) Close() error { return l.limiter.Close() }

func (l *observed) BackendName() string { return l.backend }

func (l *observed) Unwrap() ratelimit.Limiter { return l.limiter }
