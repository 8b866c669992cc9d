package distributed

import "time"

// WithClock is WithClientClock on the clock now, so that tests can play exact timelines,
// with a skew bound of an hour: keys outlive their state by that much on Redis's own
// clock, which runs on while a test's stands still.
func WithClock(now func() time.Time) Option { return WithClientClockOn(now, time.Hour) }

// WithClientClockOn is WithClientClock(maxSkew) on the clock now instead of time.Now.
func WithClientClockOn(now func() time.Time, maxSkew time.Duration) Option {
	return func(o *options) { o.now, o.skew = now, maxSkew }
}

// SetAppClock makes l compute the periods of its quotas around now's readings, while its
// script keeps reading Redis TIME (or WithClock's): an application server whose clock is
// off.
func SetAppClock(l *Limiter, now func() time.Time) { l.appClock = now }
