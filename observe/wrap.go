package observe

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/nilarg"
)

// Wrap returns l reporting each of its decisions to o: each Allow and AllowN as a Decision
// with Policy set to policy, Backend to BackendName(l) (or, when l is an OriginReporter
// such as fallback.Limiter, the backend that decided), Cost to n, Priority to the priority
// ctx carries and Duration to the time the call to l took (for a DurationSampler, one call
// in its n is timed: see Stopwatch); and, when l is a ratelimit.MultiLimiter, each AllowAll
// as ReportAll does, one Decision per limit under its Request's Name (policy for one
// without); each Hold, when l has it, as a decision of AllowN; and each Settle and Reserve,
// when l has them, as ReportSettle and ReportReserve do. Wait, Peek, Refund and Reset pass
// through unobserved: how long a caller waited is not how long a decision took, and the
// others decide nothing.
//
// Through ratelimit.As, the Limiter Wrap returns has the capabilities of l and no others:
// it answers itself for ratelimit.MultiLimiter, ratelimit.Settler,
// ratelimit.Reserver and OriginReporter, which it observes, and lends the rest
// (ratelimit.Inspector, ratelimit.LimitValidator) through its Unwrap method, which returns
// l. It is a BackendNamer, named as l. It is safe for concurrent use.
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
	w.multi, _ = ratelimit.As[ratelimit.MultiLimiter](l)
	w.origins, _ = ratelimit.As[OriginReporter](l)
	w.settler, _ = ratelimit.As[ratelimit.Settler](l)
	w.reserver, _ = ratelimit.As[ratelimit.Reserver](l)
	return w
}

// observed is the Limiter Wrap returns. Its optional methods are on multiPart and
// originsPart, which As gives when its limiter has them: a method in observed's own method
// set would claim the capability whatever its limiter can do.
type observed struct {
	limiter  ratelimit.Limiter
	multi    ratelimit.MultiLimiter // limiter, if it decides several limits
	origins  OriginReporter         // limiter, if it reports origins
	settler  ratelimit.Settler      // limiter's, if it settles
	reserver ratelimit.Reserver     // limiter's, if it books slots ahead
	obs      Observer               // wrapped by Join: panics recovered
	// one is obs's only observer when Join made obs of one, else obs. AllowN tells it of
	// its decision through observeDecision, which recovers its panics as obs would, and
	// spares the Decision a copy and a call through obs.
	one     Observer
	policy  string
	backend string
	clock   *Stopwatch
}

var _ interface {
	ratelimit.Limiter
	BackendNamer
	Unwrap() ratelimit.Limiter
	As(any) bool
} = (*observed)(nil)

// As gives what ratelimit.As asks of the capabilities observed observes: a
// ratelimit.MultiLimiter or an OriginReporter when its limiter has one. The others are its
// limiter's, found through Unwrap.
func (l *observed) As(target any) bool {
	switch t := target.(type) {
	case *ratelimit.MultiLimiter:
		if l.multi != nil {
			*t = multiPart{l}
			return true
		}
	case *OriginReporter:
		if l.origins != nil {
			*t = originsPart{l}
			return true
		}
	case *ratelimit.Settler:
		if l.settler != nil {
			*t = settlePart{l}
			return true
		}
	case *ratelimit.Reserver:
		if l.reserver != nil {
			*t = reservePart{l}
			return true
		}
	}
	return false
}

// Hold is the observed limiter's Settler's: each hold reported as a decision, with the
// origin the Settler tells (HoldOriginReporter).
func (p settlePart) Hold(ctx context.Context, key string, limit ratelimit.Limit, n int, ttl time.Duration) (ratelimit.Result, error) {
	var (
		res    ratelimit.Result
		origin Origin
		err    error
	)
	start := p.o.clock.Start()
	if hr, ok := p.o.settler.(HoldOriginReporter); ok {
		res, origin, err = hr.HoldOrigin(ctx, key, limit, n, ttl)
	} else {
		res, err = p.o.settler.Hold(ctx, key, limit, n, ttl)
	}
	call := Call{Policy: p.o.policy, Backend: p.o.backend, Origin: origin, Duration: p.o.clock.Stop(start)}
	Report(ctx, p.o.obs, call, limit, n, res, err)
	return res, err
}

// settlePart is an observed limiter's ratelimit.Settler: each settle reported as
// ReportSettle says.
type settlePart struct{ o *observed }

func (p settlePart) Settle(ctx context.Context, key string, limit ratelimit.Limit, c ratelimit.Charge, reserved, actual int) (ratelimit.Result, error) {
	start := p.o.clock.Start()
	res, err := p.o.settler.Settle(ctx, key, limit, c, reserved, actual)
	ReportSettle(ctx, p.o.obs, Call{Policy: p.o.policy, Backend: p.o.backend, Duration: p.o.clock.Stop(start)}, limit, reserved, actual, res, err)
	return res, err
}

// reservePart is an observed limiter's ratelimit.Reserver: each Reserve reported as
// ReportReserve says.
type reservePart struct{ o *observed }

func (p reservePart) Reserve(ctx context.Context, key string, limit ratelimit.Limit, n int, maxWait time.Duration) (ratelimit.Result, error) {
	start := p.o.clock.Start()
	res, err := p.o.reserver.Reserve(ctx, key, limit, n, maxWait)
	ReportReserve(ctx, p.o.obs, Call{Policy: p.o.policy, Backend: p.o.backend, Duration: p.o.clock.Stop(start)}, limit, n, res, err)
	return res, err
}

// multiPart is an observed limiter's ratelimit.MultiLimiter.
type multiPart struct{ o *observed }

func (p multiPart) AllowAll(ctx context.Context, reqs []ratelimit.Request) (ratelimit.MultiResult, error) {
	mr, _, err := p.o.allowAll(ctx, reqs)
	return mr, err
}

// originsPart is an observed limiter's OriginReporter.
type originsPart struct{ o *observed }

func (p originsPart) AllowNOrigin(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, Origin, error) {
	var res ratelimit.Result
	org, err := p.o.allowN(ctx, key, &limit, n, &res)
	return res, org, err
}

func (p originsPart) AllowAllOrigin(ctx context.Context, reqs []ratelimit.Request) (ratelimit.MultiResult, Origin, error) {
	return p.o.allowAll(ctx, reqs)
}

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

// allowN is AllowNOrigin with the answer in *res: one body for it, Allow and AllowN, which pass a
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

// allowAll is AllowAllOrigin: for a limiter that decides no several limits, an error
// wrapping ratelimit.ErrNotSupported, as OriginReporter says.
func (l *observed) allowAll(ctx context.Context, reqs []ratelimit.Request) (ratelimit.MultiResult, Origin, error) {
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

func (l *observed) Wait(ctx context.Context, key string, limit ratelimit.Limit) error {
	return l.limiter.Wait(ctx, key, limit)
}

func (l *observed) Close() error { return l.limiter.Close() }

func (l *observed) BackendName() string { return l.backend }

func (l *observed) Unwrap() ratelimit.Limiter { return l.limiter }
