package ratelimittest

import (
	"testing"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/priority"
)

// Harness tells Run, Check and Agree how to build the limiter under test and what it can do
// beyond what they find out from the limiter itself: its capabilities (ratelimit.MultiLimiter,
// ratelimit.Inspector, whether Wait is supported) are detected; what the Harness declares
// decides the rest.
type Harness struct {
	// New returns a new limiter with no buckets, built with c.Algorithm and c.Reserves and
	// reading c.Clock (unless Clock says it cannot). It closes the limiter at t's cleanup. New
	// is called for every rule, sometimes inside a testing/synctest bubble: it must not start
	// anything that outlives the limiter. Required.
	New func(t testing.TB, c Config) ratelimit.Limiter
	// Algorithms are the algorithms the limiter implements, as its default and named by a
	// limit. Nil means all of them (Algorithms()).
	Algorithms []ratelimit.Algorithm
	// Clock says how the limiter's time can be moved. The zero value is ClockInjected.
	Clock ClockControl
	// Reserves declares that the limiter honours Config.Reserves, the priority reserves:
	// the rules of priorities then run. Without it, New is only given the zero Reserves.
	Reserves bool
	// Warmup declares that the limiter implements ratelimit.Limit.Warmup on the token
	// bucket. Without it, the limiter must refuse every limit with a warm-up with
	// ratelimit.ErrNotSupported, as every other algorithm must.
	Warmup bool
	// Quotas declares that the limiter implements ratelimit.CalendarQuota, named by a
	// limit: the rules of calendar quotas then run, once, on limiters of the first of
	// Algorithms.
	Quotas bool
	// KeepUsage declares that the limiter implements ratelimit.Limit.KeepUsage: the rules
	// of usage carried across a change of a key's limit then run (and Agree plays them).
	KeepUsage bool
}

// Config is what one limiter made by Harness.New must be built with.
type Config struct {
	// Algorithm is the limiter's default algorithm, one of Harness.Algorithms: it decides
	// the limits that name none. The limiter must decide a limit naming any of
	// Harness.Algorithms by that one, whatever its default (ratelimit.Limit.Algorithm).
	Algorithm ratelimit.Algorithm
	// Reserves are the limiter's priority reserves; the zero value is the default.
	Reserves priority.Reserves
	// Clock is the clock the limiter must read its time from, with ClockInjected. Inside a
	// testing/synctest bubble it reads the bubble's clock.
	Clock *Clock
}

// ClockControl says how Run can move a limiter's time.
type ClockControl int

const (
	// ClockInjected: the limiter reads Config.Clock.Now, and nothing else, for its time.
	// Every rule runs; the rules of a waiting Wait run in a testing/synctest bubble, on a
	// Config.Clock that reads the bubble's clock.
	ClockInjected ClockControl = iota
	// ClockUncontrolled: the limiter reads a clock no test can move, such as a database
	// server's. Only the rules that hold whatever the clock does run: bad input, keys,
	// Wait's refusals and Close. Such a backend is better tested with a clock of its own
	// injected, as the Redis backend's tests do with its script.
	ClockUncontrolled
)

func (h Harness) algorithms() []ratelimit.Algorithm {
	if h.Algorithms == nil {
		return Algorithms()
	}
	return h.Algorithms
}
