package slogobserver

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/observe"
)

// Observer is an observe.Observer, with a hook for fallback.WithStateHook, that writes
// records to a *slog.Logger: denials at one level, errors at another, a bounded number of
// each per interval, and the edges of an outage (the circuit breaker opening, then closing; the
// flips between open and half-open at Debug). Allowed decisions are not logged. It is safe for
// concurrent use.
type Observer struct {
	logger      *slog.Logger
	deniedLevel slog.Level
	errorLevel  slog.Level
	denied      gate
	errors      gate
	clock       func() time.Time // nil: the monotonic clock
	epoch       time.Time
}

var (
	_ observe.Observer = (*Observer)(nil)
)

// New returns an Observer that writes to logger, or to slog.Default() (as it is when New
// is called) if logger is nil.
func New(logger *slog.Logger, opts ...Option) *Observer {
	cfg := defaultOptions()
	for _, opt := range opts {
		opt(&cfg)
	}
	if logger == nil {
		logger = slog.Default()
	}
	o := &Observer{
		logger:      logger,
		deniedLevel: cfg.deniedLevel,
		errorLevel:  cfg.errorLevel,
		denied:      gate{limit: int64(cfg.records), interval: int64(cfg.interval)},
		errors:      gate{limit: int64(cfg.records), interval: int64(cfg.interval)},
		clock:       cfg.clock,
	}
	if o.clock != nil {
		o.epoch = o.clock()
	} else {
		o.epoch = time.Now()
	}
	return o
}

// ObserveDecision logs a denial or an error, unless the record limit has been reached in
// the current interval. A record that is not written costs a few atomic operations and
// allocates nothing.
func (o *Observer) ObserveDecision(ctx context.Context, d observe.Decision) {
	var (
		level slog.Level
		g     *gate
		msg   string
	)
	switch {
	case d.Lease && d.Outcome == observe.OutcomeError:
		level, g, msg = o.errorLevel, &o.errors, "rate limit: a lease's call for a chunk failed"
	case d.Lease:
		// A chunk granted or refused decides no request: the denials it leads to are
		// observed as decisions.
		return
	case d.Concurrency && d.Outcome == observe.OutcomeDenied:
		level, g, msg = o.deniedLevel, &o.denied, "concurrency limit: request refused, no permit free"
	case d.Concurrency && d.Outcome == observe.OutcomeError:
		level, g, msg = o.errorLevel, &o.errors, "concurrency limit: the limiter could not decide"
	case d.Settle && d.Outcome == observe.OutcomeError:
		level, g, msg = o.errorLevel, &o.errors, "rate limit: a settle was refused or not made"
	case d.Reserve && d.Outcome == observe.OutcomeDenied:
		level, g, msg = o.deniedLevel, &o.denied, "rate limit: no slot within the wait"
	case d.Outcome == observe.OutcomeDenied && d.Shadow:
		level, g, msg = o.deniedLevel, &o.denied, "rate limit: request would be denied (shadow)"
	case d.Outcome == observe.OutcomeDenied:
		level, g, msg = o.deniedLevel, &o.denied, "rate limit: request denied"
	case d.Outcome == observe.OutcomeError:
		level, g, msg = o.errorLevel, &o.errors, "rate limit: the limiter could not decide"
	default:
		return
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if !o.logger.Enabled(ctx, level) {
		return
	}
	ok, dropped := g.pass(o.now())
	if !ok {
		return
	}
	attrs := make([]slog.Attr, 0, 13)
	attrs = append(attrs,
		slog.String("policy", d.Policy),
		slog.String("backend", d.Backend),
		slog.Bool("shadow", d.Shadow),
		slog.Int("cost", d.Cost),
		slog.String("priority", d.Priority.String()),
	)
	if !d.Concurrency {
		attrs = append(attrs, slog.String("limit", d.Limit.String()))
	}
	attrs = append(attrs, slog.Duration("duration", d.Duration))
	if d.Outcome == observe.OutcomeError {
		attrs = append(attrs, slog.String("error_type", d.ErrorKind.String()))
		if d.Err != nil {
			attrs = append(attrs, slog.String("err", d.Err.Error()))
		}
	} else if !d.Concurrency {
		attrs = append(attrs, slog.Int("remaining", d.Remaining))
	}
	if d.Cached {
		attrs = append(attrs, slog.Bool("cached", true))
	}
	if dropped > 0 {
		attrs = append(attrs, slog.Int64("dropped", dropped))
	}
	o.logger.LogAttrs(ctx, level, msg, attrs...)
}

// ObserveBreaker logs the two edges of an outage, never dropped: at Warn when the breaker
// opens from closed (decisions degraded from then on), at Info when it closes again
// (recovered). The flips between open and half-open in between, one per probe, are logged
// at Debug, so that an outage is two lines at the default level, however long it lasts.
//
// Pass it to fallback.WithStateHook.
func (o *Observer) ObserveBreaker(c fallback.StateChange) {
	level, msg := slog.LevelDebug, "rate limit: circuit breaker "+c.To.String()+", still degraded"
	switch {
	case c.Edge() && c.Recovered():
		level, msg = slog.LevelInfo, "rate limit: circuit breaker closed, recovered"
	case c.Edge():
		level, msg = slog.LevelWarn, "rate limit: circuit breaker "+c.To.String()+", decisions degraded"
	}
	attrs := []slog.Attr{slog.String("from", c.From.String()), slog.String("to", c.To.String())}
	if c.Err != nil {
		attrs = append(attrs, slog.String("err", c.Err.Error()))
	}
	o.logger.LogAttrs(context.Background(), level, msg, attrs...)
}

// now returns the time in nanoseconds since the Observer's epoch.
func (o *Observer) now() int64 {
	if o.clock != nil {
		return int64(o.clock().Sub(o.epoch))
	}
	return int64(time.Since(o.epoch))
}

// gate lets through at most limit records per interval, in fixed windows, and counts the
// others. Two calls that both see a window end may both reset it: the limit is then
// exceeded by the few records let through meanwhile, which only logs a little more.
type gate struct {
	limit    int64
	interval int64        // ns
	start    atomic.Int64 // start of the current window, ns since the epoch
	passed   atomic.Int64 // records let through in the current window
	dropped  atomic.Int64 // records dropped since the last one let through
}

// pass reports whether a record at now may be written and, if so, how many were dropped
// since the last one written.
func (g *gate) pass(now int64) (ok bool, dropped int64) {
	start := g.start.Load()
	if now-start >= g.interval && g.start.CompareAndSwap(start, now) {
		g.passed.Store(0)
	}
	if g.passed.Add(1) > g.limit {
		g.dropped.Add(1)
		return false, 0
	}
	return true, g.dropped.Swap(0)
}
