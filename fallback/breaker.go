package fallback

import "github.com/sluice-go/ratelimit/internal/breaker"

// The breaker's states and changes are shared with package concurrency/fallback, so that
// one hook, such as an observer's ObserveBreaker method, serves both.
type (
	// State is the state of a Limiter's circuit breaker: Closed, Open or HalfOpen. Its
	// String method returns "closed", "open" or "half-open".
	State = breaker.State
	// StateChange is one transition of a Limiter's circuit breaker, as passed to the hooks
	// of WithStateHook (and so to the ObserveBreaker methods of the kit's observers): its
	// From and To states, and Err, the failure that opened the breaker for a change to
	// Open. The transitions are Closed → Open (the primary failed WithFailureThreshold
	// times in a row), Open → HalfOpen (the cooldown ended and a probe goes to the
	// primary), HalfOpen → Closed (the probe succeeded) and HalfOpen → Open (it failed).
	// Its methods: Degraded (the breaker is open or half-open after it), Recovered (it
	// closed), Edge (it begins or ends an outage: Closed → Open, HalfOpen → Closed; the
	// probes' changes between are not edges), String ("circuit breaker closed → open
	// (degraded): …") and LogValue (a slog group of from, to, degraded and err).
	StateChange = breaker.Change
)

// The states of the circuit breaker.
const (
	// Closed is the normal state, and the zero State: every call goes to the primary.
	Closed = breaker.Closed
	// Open means the primary failed too often: it is not called until the cooldown ends,
	// and every decision comes from the secondary (or fails with ErrUnavailable).
	Open = breaker.Open
	// HalfOpen means the cooldown has ended: one call, the probe, goes to the primary, and
	// the others to the secondary until the probe's answer closes or reopens the breaker.
	HalfOpen = breaker.HalfOpen
)
