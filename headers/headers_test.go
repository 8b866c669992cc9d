package headers_test

import (
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/headers"
)

// The three decisions of PerMinute(2) at one instant: a full bucket of 2 tokens that refills
// one token every 30 s.
var (
	first = ratelimit.Result{Allowed: true, Limit: ratelimit.PerMinute(2), Remaining: 1,
		ResetAfter: 30 * time.Second} // one token spent: full again in 30 s
	second = ratelimit.Result{Allowed: true, Limit: ratelimit.PerMinute(2), Remaining: 0,
		ResetAfter: 60 * time.Second} // both spent: full again in 60 s
	third = ratelimit.Result{Allowed: false, Limit: ratelimit.PerMinute(2), Remaining: 0,
		RetryAfter: 30 * time.Second, ResetAfter: 60 * time.Second} // next token in 30 s
)

func TestFields(t *testing.T) {
	tests := []struct {
		name  string
		style headers.Style
		res   ratelimit.Result
		want  []headers.Field
	}{
		{"x allowed", headers.StyleXRateLimit, first, []headers.Field{
			{"X-RateLimit-Limit", "2"}, {"X-RateLimit-Remaining", "1"}, {"X-RateLimit-Reset", "30"}}},
		{"x denied", headers.StyleXRateLimit, third, []headers.Field{
			{"Retry-After", "30"},
			{"X-RateLimit-Limit", "2"}, {"X-RateLimit-Remaining", "0"}, {"X-RateLimit-Reset", "60"}}},
		// Allowed: t is the time until the bucket is full again.
		{"ietf allowed", headers.StyleIETF, second, []headers.Field{
			{"RateLimit-Policy", `"default";q=2;w=60`}, {"RateLimit", `"default";r=0;t=60`}}},
		// Denied: t equals Retry-After, never more.
		{"ietf denied", headers.StyleIETF, third, []headers.Field{
			{"Retry-After", "30"},
			{"RateLimit-Policy", `"default";q=2;w=60`}, {"RateLimit", `"default";r=0;t=30`}}},
		{"both denied", headers.StyleBoth, third, []headers.Field{
			{"Retry-After", "30"},
			{"X-RateLimit-Limit", "2"}, {"X-RateLimit-Remaining", "0"}, {"X-RateLimit-Reset", "60"},
			{"RateLimit-Policy", `"default";q=2;w=60`}, {"RateLimit", `"default";r=0;t=30`}}},
		{"none allowed", headers.StyleNone, first, []headers.Field{}},
		{"none denied keeps Retry-After", headers.StyleNone, third, []headers.Field{{"Retry-After", "30"}}},
		{"unknown style is the default", headers.Style(42), first, []headers.Field{
			{"X-RateLimit-Limit", "2"}, {"X-RateLimit-Remaining", "1"}, {"X-RateLimit-Reset", "30"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, headers.Fields(tt.style, headers.DefaultPolicyName, tt.res))
		})
	}
}

func TestSet(t *testing.T) {
	h := http.Header{}
	h.Set("X-RateLimit-Remaining", "stale")
	headers.Set(h, headers.StyleBoth, "api", third)
	assert.Equal(t, http.Header{
		"Retry-After":           {"30"},
		"X-Ratelimit-Limit":     {"2"},
		"X-Ratelimit-Remaining": {"0"}, // replaced, not appended
		"X-Ratelimit-Reset":     {"60"},
		"Ratelimit-Policy":      {`"api";q=2;w=60`},
		"Ratelimit":             {`"api";r=0;t=30`},
	}, h)
}

func TestRetryAfterSeconds(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want int64
	}{
		{-time.Second, 1},                  // never below 1 on a denial
		{0, 1},                             // same
		{time.Nanosecond, 1},               // rounded up
		{time.Second, 1},                   // exact
		{time.Second + time.Nanosecond, 2}, // a nanosecond late is a second late
		{1500 * time.Millisecond, 2},
		{30 * time.Second, 30},
		{math.MaxInt64, 9223372037}, // 9223372036.854775807 s rounded up, no overflow
	}
	for _, tt := range tests {
		t.Run(tt.d.String(), func(t *testing.T) {
			assert.Equal(t, tt.want, headers.RetryAfterSeconds(tt.d))
		})
	}
}

func TestXRateLimitClampsNegatives(t *testing.T) {
	got := headers.XRateLimit(ratelimit.Result{Limit: ratelimit.Limit{Burst: -1}, Remaining: -3, ResetAfter: -time.Second})
	assert.Equal(t, []headers.Field{
		{"X-RateLimit-Limit", "0"}, {"X-RateLimit-Remaining", "0"}, {"X-RateLimit-Reset", "0"}}, got)
}

func TestPolicy(t *testing.T) {
	tests := []struct {
		name  string
		limit ratelimit.Limit
		want  string
	}{
		{"default", ratelimit.PerMinute(100), `"default";q=100;w=60`},
		{"default", ratelimit.PerHour(1000), `"default";q=1000;w=3600`},
		{"default", ratelimit.PerSecond(10), `"default";q=10;w=1`},
		// 7/min: Burst/Rate = 7/(7/60) is 60 give or take an ulp; it must not become 61.
		{"default", ratelimit.PerMinute(7), `"default";q=7;w=60`},
		// Burst 10 at 3/s refills in 3.33 s: rounded up to 4.
		{"default", ratelimit.Limit{Rate: 3, Burst: 10}, `"default";q=10;w=4`},
		// Burst 2 at 50/s refills in 40 ms: stated per second instead.
		{"default", ratelimit.Limit{Rate: 50.5, Burst: 2}, `"default";q=50;w=1`},
		// No valid rate: no window.
		{"default", ratelimit.Limit{Rate: math.NaN(), Burst: 5}, `"default";q=5`},
		{"default", ratelimit.Limit{}, `"default";q=0`},
		// A rate so slow the window overflows 15 digits is clamped.
		{"default", ratelimit.Limit{Rate: 1e-300, Burst: 1}, `"default";q=1;w=999999999999999`},
		// Quotes and backslashes escaped; bytes outside printable ASCII replaced.
		{`a"b\c`, ratelimit.PerSecond(1), `"a\"b\\c";q=1;w=1`},
		{"é\n", ratelimit.PerSecond(1), `"???";q=1;w=1`},
		// A calendar quota: its period's nominal length.
		{"plan", ratelimit.Quota(10000, ratelimit.Period{Unit: ratelimit.Day, Zone: "Europe/Paris"}), `"plan";q=10000;w=86400`},
		{"plan", ratelimit.Quota(7, ratelimit.Period{Unit: ratelimit.Week, Count: 2, Zone: "UTC"}), `"plan";q=7;w=1209600`},
		{"plan", ratelimit.Quota(1e6, ratelimit.Period{Unit: ratelimit.Month, Anchor: 15, Zone: "UTC"}), `"plan";q=1000000;w=2629746`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			assert.Equal(t, tt.want, headers.Policy(tt.name, tt.limit))
		})
	}
}

func TestRateLimit(t *testing.T) {
	tests := []struct {
		res  ratelimit.Result
		want string
	}{
		{first, `"p";r=1;t=30`},
		{third, `"p";r=0;t=30`},
		// Allowed with the bucket full (nothing taken yet, as after a cost of 0): t=0.
		{ratelimit.Result{Allowed: true, Remaining: 5}, `"p";r=5;t=0`},
		// Denied with a RetryAfter under a second: t and Retry-After both 1.
		{ratelimit.Result{RetryAfter: time.Millisecond, ResetAfter: time.Hour}, `"p";r=0;t=1`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			assert.Equal(t, tt.want, headers.RateLimit("p", tt.res))
		})
	}
}

func TestStyleString(t *testing.T) {
	assert.Equal(t, "StyleXRateLimit", headers.Style(0).String())
	assert.Equal(t, "StyleBoth", headers.StyleBoth.String())
	assert.Equal(t, "Style(9)", headers.Style(9).String())
}

// The shapes the IETF builders may produce: a String item with integer parameters (RFC 9651).
var (
	policyRE    = regexp.MustCompile(`^"([\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*";q=[0-9]{1,15}(;w=[1-9][0-9]{0,14})?$`)
	rateLimitRE = regexp.MustCompile(`^"([\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*";r=[0-9]{1,15};t=([0-9]{1,15})$`)
	digitsRE    = regexp.MustCompile(`^[0-9]+$`)
)

func FuzzFields(f *testing.F) {
	f.Add("default", 2.0/60, 2, false, 0, int64(30*time.Second), int64(60*time.Second))
	f.Add(`q"\`, 1e-300, -5, true, -1, int64(-1), int64(math.MaxInt64))
	f.Add("\xff\x00", math.Inf(1), math.MaxInt, false, math.MinInt, int64(math.MinInt64), int64(0))
	f.Add("", math.NaN(), 1, false, 1, int64(1), int64(1))
	f.Fuzz(func(t *testing.T, name string, rate float64, burst int, allowed bool, remaining int, retry, reset int64) {
		res := ratelimit.Result{Allowed: allowed, Limit: ratelimit.Limit{Rate: rate, Burst: burst},
			Remaining: remaining, RetryAfter: time.Duration(retry), ResetAfter: time.Duration(reset)}
		fields := headers.Fields(headers.StyleBoth, name, res)
		var retryAfter int64 = -1
		for _, fl := range fields {
			switch fl.Name {
			case headers.NamePolicy:
				require.Regexp(t, policyRE, fl.Value)
			case headers.NameRateLimit:
				m := rateLimitRE.FindStringSubmatch(fl.Value)
				require.NotNil(t, m, fl.Value)
				if !allowed {
					tv, _ := strconv.ParseInt(m[2], 10, 64)
					require.LessOrEqual(t, tv, retryAfter, "t must not exceed Retry-After")
				}
			case headers.NameRetryAfter:
				require.Regexp(t, digitsRE, fl.Value)
				retryAfter, _ = strconv.ParseInt(fl.Value, 10, 64)
				require.GreaterOrEqual(t, retryAfter, int64(1))
			default:
				require.Regexp(t, digitsRE, fl.Value)
			}
		}
		require.Equal(t, !allowed, retryAfter >= 1, "Retry-After exactly on denials")
	})
}

// SetMulti reports the binding limit, and RateLimit-Policy lists every limit by name: 2 a
// second and 5 a minute, the per-second one denied with 500 ms to wait.
func TestSetMulti(t *testing.T) {
	reqs := []ratelimit.Request{
		{Key: "k", Limit: ratelimit.PerSecond(2), Name: "second"},
		{Key: "k", Name: "unlimited"},
		{Key: "k", Limit: ratelimit.PerMinute(5), Name: "minute"},
	}
	mr := ratelimit.MultiResult{
		Results: []ratelimit.Result{
			{Limit: ratelimit.PerSecond(2), RetryAfter: 500 * time.Millisecond, ResetAfter: time.Second},
			{Allowed: true},
			{Allowed: true, Limit: ratelimit.PerMinute(5), Remaining: 2, ResetAfter: 36 * time.Second},
		},
		Binding: 0,
	}
	h := http.Header{}
	headers.SetMulti(h, headers.StyleBoth, reqs, mr)
	assert.Equal(t, http.Header{
		"Retry-After":           {"1"},
		"X-Ratelimit-Limit":     {"2"},
		"X-Ratelimit-Remaining": {"0"},
		"X-Ratelimit-Reset":     {"1"},
		"Ratelimit-Policy":      {`"second";q=2;w=1, "minute";q=5;w=60`},
		"Ratelimit":             {`"second";r=0;t=1`},
	}, h)
	h = http.Header{}
	headers.SetMulti(h, headers.StyleIETF, reqs, mr)
	assert.Equal(t, http.Header{
		"Retry-After":      {"1"},
		"Ratelimit-Policy": {`"second";q=2;w=1, "minute";q=5;w=60`},
		"Ratelimit":        {`"second";r=0;t=1`},
	}, h)
}

// The headers describe the limits applied: while fallback is degraded, each Result carries
// the instance's share of its limit, and RateLimit-Policy lists the shares (q=2 of the
// 5 a minute asked, at WithInstances(2)), as X-RateLimit-Limit reports the binding share.
func TestSetMultiAppliedLimits(t *testing.T) {
	share := ratelimit.Limit{Rate: ratelimit.PerMinute(5).Rate / 2, Burst: 2}
	reqs := []ratelimit.Request{{Key: "k", Limit: ratelimit.PerMinute(5), Name: "minute"}}
	mr := ratelimit.MultiResult{Allowed: true, Results: []ratelimit.Result{
		{Allowed: true, Limit: share, Remaining: 1, ResetAfter: 24 * time.Second},
	}}
	h := http.Header{}
	headers.SetMulti(h, headers.StyleBoth, reqs, mr)
	assert.Equal(t, []string{"2"}, h["X-Ratelimit-Limit"])
	assert.Equal(t, []string{`"minute";q=2;w=48`}, h["Ratelimit-Policy"])
}

// TestSetAllocations: Set writes every field of a decision with one allocation, whatever
// the style, when the values fit in 128 bytes. The IETF fields of a policy named by 200
// bytes take 420: the 128-byte scratch grows twice, then the values and their slices take
// one allocation each. The header map already has room for the fields, as it has after the
// first response, so that the map's own growth is not counted.
func TestSetAllocations(t *testing.T) {
	res := ratelimit.Result{Allowed: true, Limit: ratelimit.PerMinute(100), Remaining: 42, ResetAfter: 35 * time.Second}
	denied := ratelimit.Result{Limit: ratelimit.PerMinute(100), RetryAfter: time.Second, ResetAfter: time.Minute}
	long := strings.Repeat("p", 200)
	tests := []struct {
		name   string
		style  headers.Style
		policy string
		res    ratelimit.Result
		want   float64
	}{
		{"x-ratelimit", headers.StyleXRateLimit, "default", res, 1},
		{"x-ratelimit denied", headers.StyleXRateLimit, "default", denied, 1},
		{"ietf", headers.StyleIETF, "GET /v1/items/{id}", res, 1},
		{"both denied", headers.StyleBoth, "GET /v1/items/{id}", denied, 1},
		{"ietf, long policy name", headers.StyleIETF, long, res, 4},
		{"none allowed", headers.StyleNone, "default", res, 0},
		{"none denied", headers.StyleNone, "default", denied, 1}, // Retry-After
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			headers.Set(h, tt.style, tt.policy, tt.res)
			want := h.Clone()
			got := testing.AllocsPerRun(100, func() { headers.Set(h, tt.style, tt.policy, tt.res) })
			assert.Equal(t, tt.want, got)
			assert.Equal(t, want, h)
		})
	}
}
