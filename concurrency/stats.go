package concurrency

// Stats is a snapshot of a limiter's permits, for metrics. It names no key, and gives no
// figure per key: keys may carry personal data, and there may be millions of them.
type Stats struct {
	// Keys is the number of keys tracked, idle ones included (a backend may cap it).
	Keys int
	// InFlight is the number of permits granted and not yet released.
	InFlight int
	// Waiting is the number of callers waiting for a permit.
	Waiting int
	// MinLimit and MaxLimit are the lowest and the highest limit in force among the keys
	// tracked: with an adaptive limit (AIMD), how far the limits have moved; without one,
	// the range of the calls' max. Both are 0 when no key is tracked.
	MinLimit, MaxLimit int
}

// StatsReporter is a limiter that reports a snapshot of its permits, as every backend of
// the kit does. The observers of packages otelmetrics and prommetrics turn it into gauges,
// under a policy name of the user's choosing.
type StatsReporter interface {
	Stats() Stats
}
