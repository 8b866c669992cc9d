package observe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/nilarg"
	"github.com/sluice-go/ratelimit/priority"
)

// Observer is told of every decision a limiter makes: by the middlewares given one with
// WithObserver, by Wrap for code that calls a Limiter directly, and by whatever else
// reports decisions (Report). otelmetrics, prommetrics (a module of its own) and
// slogobserver implement it.
//
// ObserveDecision runs synchronously, on the goroutine of the request being decided, after
// the decision and before the request goes on: it must be fast (a few counters) and must
// not block. The observers of this module take well under a microsecond and allocate
// nothing. ctx is the request's context, for observers that link a decision to a trace; it
// may have ended. A panic in an observer reached through Join or Wrap is recovered and the
// decision it was told of is dropped: observing never breaks a request.
//
// An Observer must be safe for concurrent use.
type Observer interface {
	ObserveDecision(ctx context.Context, d Decision)
}

// Decision describes one decision to an Observer. It is passed by value, so that telling an
// observer allocates nothing.
//
// It never holds the key: keys are personal data (client IPs, user IDs) and unbounded in
// number. Policy and Backend are names fixed by configuration, few in number, safe to use
// as metric attributes.
type Decision struct {
	// Policy names the limit that decided, as configured where the decision was made (a
	// middleware's policy name, a Request's Name, the policy given to Wrap).
	Policy string
	// Backend names the limiter that decided, as BackendName gives it: "local",
	// "distributed", "fallback". Behind a limiter made of several (fallback), the one of
	// them that decided (see OriginReporter).
	Backend string
	// Outcome is allowed, denied or error. In shadow mode it is what the limiter decided,
	// although the request proceeds whatever it was.
	Outcome Outcome
	// ErrorKind is why the limiter could not decide, when Outcome is OutcomeError, and
	// KindNone otherwise.
	ErrorKind ErrorKind
	// Err is the limiter's error, when Outcome is OutcomeError. The errors of this module
	// never hold a key.
	Err error
	// Shadow reports a decision made in shadow mode: reported, never enforced.
	Shadow bool
	// Cached reports a denial answered by a denial cache (fallback's) without asking the
	// backend.
	Cached bool
	// Cost is the number of tokens asked for.
	Cost int
	// Priority is the priority the request was decided at: the one its context carried
	// (priority.From), Critical when it carried none.
	Priority priority.Level
	// Remaining is the number of whole tokens left after the decision (Result.Remaining);
	// 0 on errors.
	Remaining int
	// Limit is the limit the decision was made under (Result.Limit): the limit asked for,
	// or this instance's share of it when fallback degraded to its secondary.
	Limit ratelimit.Limit
	// Duration is how long the decision took: the call to the limiter, nothing else.
	// Negative when the reporter did not time the decision: only an observer that is a
	// DurationSampler is told of such a decision.
	Duration time.Duration
	// Concurrency reports a concurrency limit's decision (a middleware's WithConcurrency)
	// rather than a rate limit's: Outcome is allowed when the request got its permit to
	// run, denied when none was free in time (the queue full), error when the concurrency
	// limiter failed or the request's context ended while it waited. Backend names the
	// concurrency limiter, Duration is the time spent getting the permit, Cost is 1, and
	// Limit and Remaining are zero.
	Concurrency bool
	// Unpermitted reports a concurrency decision whose limiter failed (Outcome is error)
	// and whose request ran anyway, without a permit: the error policy was FailOpen.
	Unpermitted bool
	// Lease reports a grant of package lease rather than a decision: one call to Redis for
	// a chunk of Cost tokens (0 to give tokens back), Outcome allowed when it was answered
	// with Remaining tokens granted (perhaps fewer than asked, perhaps none for a return),
	// denied when a chunk was refused, error when Redis failed. Backend is "lease", Limit
	// the bucket's (a shard's, with WithShards), Duration the round trip.
	Lease bool
	// Settle reports a settle (ratelimit.Settler) rather than a decision: Cost is the
	// tokens the decision reserved and Actual what the work cost, Outcome allowed when
	// settled (an overrun charged, an underrun given back), error when refused (an overrun
	// past the debt bound, or on an algorithm that keeps no debt) or not made.
	Settle bool
	// Actual is, with Settle, the tokens the work cost.
	Actual int
	// Reserve reports a Reserve (ratelimit.Reserver) rather than a decision: Outcome
	// allowed when Cost tokens were booked, Delay ahead, denied when no slot came within
	// the wait, error when none could be decided.
	Reserve bool
	// Delay is, with Reserve, how long ahead the slot booked is (Result.Delay).
	Delay time.Duration
}

// Outcome is what a decision came to: allowed, denied, or no decision (an error).
type Outcome uint8

const (
	// OutcomeAllowed: the request may proceed.
	OutcomeAllowed Outcome = iota
	// OutcomeDenied: the request was limited (a denial is not an error).
	OutcomeDenied
	// OutcomeError: the limiter could not decide; Decision.ErrorKind says why.
	OutcomeError
)

// String returns "allowed", "denied" or "error", the values of the ratelimit.result
// metric attribute.
func (o Outcome) String() string {
	switch o {
	case OutcomeAllowed:
		return "allowed"
	case OutcomeDenied:
		return "denied"
	case OutcomeError:
		return "error"
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// ErrorKind sorts the errors of limiters by what an operator does about them.
type ErrorKind uint8

const (
	// KindNone is the ErrorKind of a nil error.
	KindNone ErrorKind = iota
	// KindTimeout: the backend did not answer within the limiter's own deadline (the error
	// wraps ratelimit.ErrTimeout, or context.DeadlineExceeded from a deadline the caller
	// did not set): the backend is slow or unreachable.
	KindTimeout
	// KindUnavailable: the backend failed (a refused connection, a Redis error, fallback's
	// ErrUnavailable): every error no other kind claims.
	KindUnavailable
	// KindInvalidInput: the call or its bucket was refused as it was (ratelimit's
	// ErrKeyEmpty, ErrKeyTooLong, ErrInvalidLimit, ErrInvalidCost, ErrExceedsBurst,
	// ErrNotSupported, ErrInvalidState, ErrInvalidRequest, and the errors wrapping them,
	// such as distributed.ErrCrossSlot): a mistake of configuration or of the caller, not
	// of the backend.
	KindInvalidInput
	// KindCanceled: the caller's own context ended (canceled, or past its deadline) before
	// the limiter answered; it says nothing of the backend's health.
	KindCanceled
	// KindClosed: the limiter was closed (ratelimit.ErrClosed).
	KindClosed
)

// String returns "none", "timeout", "unavailable", "invalid_input", "canceled" or "closed",
// the values of the error.type metric attribute.
func (k ErrorKind) String() string {
	switch k {
	case KindNone:
		return "none"
	case KindTimeout:
		return "timeout"
	case KindUnavailable:
		return "unavailable"
	case KindInvalidInput:
		return "invalid_input"
	case KindCanceled:
		return "canceled"
	case KindClosed:
		return "closed"
	}
	return fmt.Sprintf("ErrorKind(%d)", uint8(k))
}

// invalidInput are the errors of KindInvalidInput: the one list of the module's errors
// about a call's arguments or its bucket. The middlewares refuse such a call whatever
// their error policy, and fallback's breaker does not count it as a failure; both ask
// Classify.
var invalidInput = [...]error{
	ratelimit.ErrInvalidArgument, ratelimit.ErrExceedsBurst, ratelimit.ErrNotSupported,
	ratelimit.ErrInvalidState,
}

// Classify returns the kind of err, an error a limiter returned for a call made with ctx,
// checked in this order: nil is KindNone; ratelimit.ErrClosed is KindClosed; the errors
// about the arguments or the bucket are KindInvalidInput; ratelimit.ErrTimeout is
// KindTimeout; an error wrapping context.Canceled or context.DeadlineExceeded is
// KindCanceled when ctx has ended (the caller's deadline or cancellation) and, for
// DeadlineExceeded, KindTimeout when it has not (the limiter's own deadline); anything
// else is KindUnavailable. A nil ctx counts as one that has not ended.
//
// Classify allocates nothing; reporters use it to fill Decision.ErrorKind.
func Classify(ctx context.Context, err error) ErrorKind {
	if err == nil {
		return KindNone
	}
	if errors.Is(err, ratelimit.ErrClosed) {
		return KindClosed
	}
	for _, e := range invalidInput {
		if errors.Is(err, e) {
			return KindInvalidInput
		}
	}
	if errors.Is(err, ratelimit.ErrTimeout) {
		return KindTimeout
	}
	callerEnded := ctx != nil && ctx.Err() != nil
	switch {
	case callerEnded && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		return KindCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return KindTimeout
	}
	return KindUnavailable
}

// Join returns an Observer that tells each of list in turn, skipping nil ones (but it
// panics on one that holds a nil pointer, which would fail on every decision), and that
// recovers a panic in any of them, so that one broken observer neither fails the request
// nor keeps the others from being told. Joined observers are flattened.
//
// With a single observer, Join still adds the recovery: reporters wrap the observer they
// are given in it. Join returns nil when list holds no observer, so that a reporter can
// skip timing decisions nobody observes.
//
// The Observer Join returns is a DurationSampler: its n is the smallest of list's, an
// observer that is not a DurationSampler counting as 1. Joined with one that needs every
// duration, a DurationSampler is told of every duration.
func Join(list ...Observer) Observer {
	var m multiObserver
	for _, o := range list {
		if nilarg.Typed(o) {
			panic(fmt.Sprintf("observe: Join: a nil %T", o))
		}
		switch o := o.(type) {
		case nil:
		case multiObserver:
			m = append(m, o...)
		case *safeObserver:
			m = append(m, o.Observer)
		default:
			m = append(m, o)
		}
	}
	switch len(m) {
	case 0:
		return nil
	case 1:
		return &safeObserver{m[0]}
	}
	return m
}

// safeObserver is the Observer Join returns for one observer: the most common case, with
// the deferred recover in the method itself, which is cheaper than a call more. Its methods
// have pointer receivers: called through an interface, a method of a value receiver is
// reached through a wrapper that copies the Decision once more.
type safeObserver struct{ Observer }

var (
	_ DurationSampler = (*safeObserver)(nil)
	_ DurationSampler = multiObserver{}
)

// ObserveDecision tells the observer of d, recovering a panic. The deferred recover is
// open-coded: it costs about 15 ns when nothing panics (BenchmarkJoinRecover).
func (s *safeObserver) ObserveDecision(ctx context.Context, d Decision) {
	defer func() { _ = recover() }()
	s.Observer.ObserveDecision(ctx, d)
}

// DurationSample is the observer's n (see DurationSampler): 1 unless it is one.
func (s *safeObserver) DurationSample() int { return durationSample(s.Observer) }

// multiObserver is the Observer Join returns for several observers.
type multiObserver []Observer

// ObserveDecision tells each observer of m of d.
func (m multiObserver) ObserveDecision(ctx context.Context, d Decision) {
	for _, o := range m {
		observeDecision(ctx, o, &d)
	}
}

// DurationSample is the smallest n of m's observers (see DurationSampler).
func (m multiObserver) DurationSample() int {
	n := durationSample(m[0])
	for _, o := range m[1:] {
		n = min(n, durationSample(o))
	}
	return n
}

// observeDecision tells o of *d, recovering a panic.
func observeDecision(ctx context.Context, o Observer, d *Decision) {
	defer func() { _ = recover() }()
	o.ObserveDecision(ctx, *d)
}
