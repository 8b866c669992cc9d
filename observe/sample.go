package observe

import (
	"sync/atomic"
	"time"
)

// DurationSampler is an Observer that needs the duration of only some decisions, such as
// otelmetrics.Observer, whose histogram costs more to record than a local decision takes.
// Reporters (Wrap, the middlewares, a Stopwatch) then read the clock for one decision in
// DurationSample() and report the others with a negative Decision.Duration, which saves
// two readings of the clock per untimed decision.
//
// Only an observer that is a DurationSampler is ever told of a negative Duration: Join
// makes the observers it joins one DurationSampler whose n is the smallest of theirs, an
// observer that is not one counting as 1 (every decision timed).
type DurationSampler interface {
	Observer
	// DurationSample returns n: the reporter need time only one decision in n. A value
	// below 1 counts as 1. It is asked once, when the reporter is made.
	DurationSample() int
}

// durationSample is o's n: its DurationSample, at least 1, or 1 for an observer that is
// not a DurationSampler.
func durationSample(o Observer) int {
	if s, ok := o.(DurationSampler); ok {
		return max(s.DurationSample(), 1)
	}
	return 1
}

// Stopwatch times the decisions a reporter tells an observer of: every decision, or, for
// a DurationSampler that needs one in n, the first decision and every nth after it, so
// that the others cost no reading of the clock. Wrap and the middlewares time their
// decisions with one; code that reports decisions of its own (Report, ReportAll) may too.
//
//	start := sw.Start()
//	res, err := limiter.AllowN(ctx, key, limit, n)
//	call := observe.Call{Policy: "api", Backend: "local", Duration: sw.Stop(start)}
//	observe.Report(ctx, obs, call, limit, n, res, err)
//
// A Stopwatch is safe for concurrent use: the decisions it times are counted with one
// atomic counter.
type Stopwatch struct {
	epoch time.Time // readings are time.Since(epoch): monotonic, never negative
	n     uint64
	count atomic.Uint64
}

// NewStopwatch returns a Stopwatch for the decisions reported to o: one that times every
// decision, unless o is a DurationSampler (as Join's observers are).
func NewStopwatch(o Observer) *Stopwatch {
	return &Stopwatch{epoch: time.Now(), n: uint64(durationSample(o))}
}

// Start starts timing a decision and returns the reading to pass to Stop: negative when
// the decision is not to be timed.
func (s *Stopwatch) Start() time.Duration {
	if s.n > 1 && (s.count.Add(1)-1)%s.n != 0 {
		return -1
	}
	// One reading of the monotonic clock; time.Now would add one of the wall clock.
	return time.Since(s.epoch)
}

// Stop returns how long the decision whose Start returned start took, the Duration to
// report: negative when it was not timed.
func (s *Stopwatch) Stop(start time.Duration) time.Duration {
	if start < 0 {
		return start
	}
	return time.Since(s.epoch) - start
}
