// Package ratelimittest checks that a ratelimit.Limiter obeys the contract of the ratelimit
// package, as testing/fstest.TestFS checks a file system: one call runs every rule that
// applies, so that no rule can be forgotten. The local, Redis and fallback backends of this
// module run it; so can any other backend, to show that it answers as they do.
//
// # Run
//
// A backend's test describes it in a Harness and calls Run, as ExampleRun shows:
//
//	ratelimittest.Run(t, ratelimittest.Harness{New: newLimiter, Reserves: true})
//
// Run finds out what the limiter implements (ratelimit.MultiLimiter, ratelimit.Inspector,
// found with ratelimit.As, so that a wrapper is tested as it is found; Wait) and runs the
// rules of each, besides the rules every limiter obeys; the Harness
// declares the rest: the algorithms, priority reserves, warm-up, and how the limiter's time
// can be moved (ClockControl). Expected values come from the definitions of the algorithms
// and worked-out timelines, never from what a backend returned. Rules move the clock, never
// sleep: a backend that reads the system clock runs in testing/synctest bubbles.
//
// # Agree and Check
//
// Agree plays the same random timelines on two or more backends and requires identical
// answers, to the bit: the differential check the Redis backend runs against the local one.
// Check runs the rules of Run and returns the failures instead of failing the test.
//
// # Fakes
//
// Stub and Multi are fake limiters that answer what they are told, for the tests of what
// uses a limiter (middleware, wrappers); Clock is the clock Run moves.
package ratelimittest
