package distributed

import "time"

// WithClock makes the script take "now" from now instead of Redis TIME, so that tests can
// play exact timelines. It exists only in tests: production always uses the Redis clock.
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.clock = now }
}

// SetAppClock makes l compute the periods of its quotas around now's readings, while its
// script keeps reading Redis TIME (or WithClock's): an application server whose clock is
// off.
func SetAppClock(l *Limiter, now func() time.Time) { l.appClock = now }
