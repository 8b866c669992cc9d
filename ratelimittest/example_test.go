package ratelimittest_test

import (
	"testing"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// A backend's conformance test describes the backend in a Harness and calls Run from a test
// function; here the backend is package local, which honours priority reserves and warm-up.
func ExampleRun() {
	// In the backend's _test.go file: func TestConformance(t *testing.T) { ... }.
	testConformance := func(t *testing.T) {
		ratelimittest.Run(t, ratelimittest.Harness{
			New: func(t testing.TB, c ratelimittest.Config) ratelimit.Limiter {
				l := local.New(local.WithClock(c.Clock.Now),
					local.WithAlgorithm(c.Algorithm), local.WithReserves(c.Reserves))
				t.Cleanup(func() { l.Close() })
				return l
			},
			Reserves: true,
			Warmup:   true,
		})
	}
	_ = testConformance
}
