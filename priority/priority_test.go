package priority_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/priority"
)

func TestPriorityString(t *testing.T) {
	for p, want := range map[priority.Level]string{
		priority.Critical: "critical", priority.Normal: "normal", priority.Sheddable: "sheddable",
		-1: "unknown", 3: "unknown", math.MaxInt8: "unknown", math.MinInt8: "unknown",
	} {
		assert.Equal(t, want, p.String(), "Priority(%d)", int8(p))
	}
}

func TestPriorityContext(t *testing.T) {
	bg := context.Background()
	assert.Equal(t, priority.Critical, priority.From(bg), "no priority is Critical")
	var none context.Context
	assert.Equal(t, priority.Critical, priority.From(none), "nil context")
	cases := []struct {
		give, want priority.Level
	}{
		{priority.Critical, priority.Critical},
		{priority.Normal, priority.Normal},
		{priority.Sheddable, priority.Sheddable},
		{-1, priority.Critical}, // out of range: the nearest priority
		{math.MinInt8, priority.Critical},
		{3, priority.Sheddable},
		{math.MaxInt8, priority.Sheddable},
	}
	for _, c := range cases {
		ctx := priority.With(bg, c.give)
		assert.Equal(t, c.want, priority.From(ctx), "WithPriority(%d)", int8(c.give))
		// A child context keeps it; a later WithPriority replaces it.
		child, cancel := context.WithCancel(ctx)
		assert.Equal(t, c.want, priority.From(child))
		assert.Equal(t, priority.Critical, priority.From(priority.With(child, priority.Critical)))
		cancel()
	}
	assert.Equal(t, priority.Normal, priority.From(priority.With(none, priority.Normal)))
}

// TestWithPrioritySame: a context that already carries the priority is returned as it is,
// so that marking a request Critical (the default) costs no allocation.
func TestWithPrioritySame(t *testing.T) {
	bg := context.Background()
	assert.Equal(t, bg, priority.With(bg, priority.Critical))
	shed := priority.With(bg, priority.Sheddable)
	assert.Equal(t, shed, priority.With(shed, priority.Sheddable))
	assert.Equal(t, shed, priority.With(shed, 5), "5 is Sheddable")
	assert.NotEqual(t, shed, priority.With(shed, priority.Critical))

	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = priority.With(bg, priority.Critical) }))
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = priority.From(shed) }))
	// One allocation for the context itself; the priority and its key are boxed for free.
	assert.Equal(t, 1.0, testing.AllocsPerRun(100, func() { _ = priority.With(bg, priority.Normal) }))
}

func TestReservesValidate(t *testing.T) {
	for _, r := range []priority.Reserves{
		{}, // the defaults: 0.1 and 0.5
		{Normal: 0.2, Sheddable: 0.7},
		{Normal: -1, Sheddable: -1}, // both off
		{Normal: -1},                // Normal off, Sheddable 0.5
		{Normal: 0.5, Sheddable: 0.5},
		{Sheddable: 0.999},
		{Normal: math.Inf(-1), Sheddable: math.Inf(-1)}, // negative: off
	} {
		assert.NoError(t, r.Validate(), "%+v", r)
	}
	for _, c := range []struct {
		r    priority.Reserves
		want string
	}{
		{priority.Reserves{Normal: 1}, "reserve Normal = 1 is not a fraction below 1"},
		{priority.Reserves{Sheddable: 1.5}, "reserve Sheddable = 1.5 is not a fraction below 1"},
		{priority.Reserves{Normal: math.NaN()}, "reserve Normal = NaN is not a fraction below 1"},
		{priority.Reserves{Sheddable: math.Inf(1)}, "reserve Sheddable = +Inf is not a fraction below 1"},
		// The defaults count: Sheddable 0.05 is below the default Normal 0.1.
		{priority.Reserves{Sheddable: 0.05}, "reserve Sheddable = 0.05 is less than reserve Normal = 0.1"},
		{priority.Reserves{Normal: 0.6}, "reserve Sheddable = 0.5 is less than reserve Normal = 0.6"},
		{priority.Reserves{Normal: 0.2, Sheddable: -1}, "reserve Sheddable = 0 is less than reserve Normal = 0.2"},
	} {
		err := c.r.Validate()
		require.ErrorIs(t, err, ratelimit.ErrInvalidArgument, "%+v", c.r)
		assert.True(t, strings.HasPrefix(err.Error(), "ratelimit: invalid reserves: "+c.want), "%v", err)
	}
}

func TestReservesTokens(t *testing.T) {
	off := priority.Reserves{Normal: -1, Sheddable: -1}
	cases := []struct {
		name                        string
		r                           priority.Reserves
		burst                       int
		critical, normal, sheddable int
	}{
		// ⌊0.1 × 10⌋ = 1, ⌊0.5 × 10⌋ = 5.
		{"Defaults10", priority.Reserves{}, 10, 0, 1, 5},
		// ⌊0.1 × 1⌋ = ⌊0.5 × 1⌋ = 0: a bucket of one token has nothing to keep back.
		{"Defaults1", priority.Reserves{}, 1, 0, 0, 0},
		// ⌊0.3⌋ = 0, ⌊1.5⌋ = 1.
		{"Defaults3", priority.Reserves{}, 3, 0, 0, 1},
		// ⌊0.1 × 100⌋ = 10, ⌊0.5 × 100⌋ = 50.
		{"Defaults100", priority.Reserves{}, 100, 0, 10, 50},
		// The explicit defaults are the zero ones.
		{"Explicit", priority.Reserves{Normal: 0.1, Sheddable: 0.5}, 10, 0, 1, 5},
		// ⌊0.2 × 10⌋ = 2, ⌊0.7 × 10⌋ = 7.
		{"Custom", priority.Reserves{Normal: 0.2, Sheddable: 0.7}, 10, 0, 2, 7},
		{"Off", off, 10, 0, 0, 0},
		{"NormalOff", priority.Reserves{Normal: -0.5}, 10, 0, 0, 5},
		// 0.99 × 100 = 99 is the most a burst of 100 can keep back.
		{"Large", priority.Reserves{Normal: 0.99, Sheddable: 0.99}, 100, 0, 99, 99},
		// Out of what Validate accepts, Tokens still leaves every priority one token.
		{"One", priority.Reserves{Normal: 1, Sheddable: 2}, 10, 0, 9, 9},
		{"NaN", priority.Reserves{Normal: math.NaN(), Sheddable: math.NaN()}, 10, 0, 0, 0},
		{"ZeroBurst", priority.Reserves{}, 0, 0, 0, 0},
		{"NegativeBurst", priority.Reserves{}, -5, 0, 0, 0},
		// At MaxBurst the product is exact: 2⁵¹ for one half.
		{"MaxBurst", priority.Reserves{}, args.MaxBurst, 0, 450359962737049, 1 << 51},
		// The largest fraction below 1 times 2⁵² is 2⁵² − 0.5, whose floor is 2⁵² − 1.
		{"AlmostOne", priority.Reserves{Normal: math.Nextafter(1, 0), Sheddable: math.Nextafter(1, 0)},
			args.MaxBurst, 0, args.MaxBurst - 1, args.MaxBurst - 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.critical, c.r.Tokens(priority.Critical, c.burst), "critical")
			assert.Equal(t, c.normal, c.r.Tokens(priority.Normal, c.burst), "normal")
			assert.Equal(t, c.sheddable, c.r.Tokens(priority.Sheddable, c.burst), "sheddable")
			// Out of range: the nearest priority.
			assert.Equal(t, c.critical, c.r.Tokens(-3, c.burst))
			assert.Equal(t, c.sheddable, c.r.Tokens(9, c.burst))
		})
	}
}

// TestReservesTokensNeverAll: for every burst up to 1000 and fractions in range, a priority
// keeps back less than the whole burst, and a lower one at least as much as a higher one.
func TestReservesTokensNeverAll(t *testing.T) {
	for burst := 1; burst <= 1000; burst++ {
		for _, f := range []float64{0.001, 0.1, 1.0 / 3, 0.5, 2.0 / 3, 0.9, 0.999, math.Nextafter(1, 0)} {
			r := priority.Reserves{Normal: f / 2, Sheddable: f}
			n, s := r.Tokens(priority.Normal, burst), r.Tokens(priority.Sheddable, burst)
			require.True(t, 0 <= n && n <= s && s < burst, "burst %d, fraction %v: %d, %d", burst, f, n, s)
			require.Equal(t, int(math.Floor(f*float64(burst))), s, "burst %d, fraction %v", burst, f)
		}
	}
}

// The priority travels in the context: a middleware sets it (WithPriorityFunc), or any code
// before the limiter does, and the limiter reads it. With the default Reserves, a bucket of
// 10 tokens keeps 1 back from Normal requests and 5 from Sheddable ones.
func ExampleWith() {
	ctx := priority.With(context.Background(), priority.Sheddable)
	fmt.Println("the request is", priority.From(ctx))

	var defaults priority.Reserves
	for _, p := range []priority.Level{priority.Critical, priority.Normal, priority.Sheddable} {
		kept := defaults.Tokens(p, 10)
		fmt.Printf("%-9s: %d of 10 kept back; one token is taken while the bucket holds %d or more\n",
			p, kept, kept+1)
	}
	// Output:
	// the request is sheddable
	// critical : 0 of 10 kept back; one token is taken while the bucket holds 1 or more
	// normal   : 1 of 10 kept back; one token is taken while the bucket holds 2 or more
	// sheddable: 5 of 10 kept back; one token is taken while the bucket holds 6 or more
}
