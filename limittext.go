package ratelimit

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// units are the units of a limit's text, in the order String tries them, with the seconds
// each holds and the other names ParseLimit accepts.
var units = [...]struct {
	name    string
	seconds float64
	aliases []string
}{
	{"s", 1, []string{"sec", "second"}},
	{"min", 60, []string{"minute"}},
	{"h", 3600, []string{"hour"}},
	{"day", 86400, []string{"d"}},
}

// algorithmNames are the names of the algorithms in a limit's text, indexed by Algorithm;
// DefaultAlgorithm has none: a text without a name leaves the algorithm to the limiter.
var algorithmNames = [...]string{
	TokenBucket:          "token-bucket",
	FixedWindow:          "fixed-window",
	SlidingWindowLog:     "sliding-log",
	SlidingWindowCounter: "sliding-counter",
	LeakyBucket:          "leaky-bucket",
}

// ParseLimit reads a limit written as String writes it: a count per unit, then, when not
// the default, the burst, the warm-up and the algorithm:
//
//	100/min                      100 a minute, a burst of 100
//	10/s burst 20                10 a second, a burst of 20
//	5/h, 1000/day, 0.5/s
//	10/s warm-up 30s             with a warm-up (a time.ParseDuration duration)
//	100/min sliding-log          enforced by a sliding window log
//	10/s burst 20 leaky-bucket   enforced by a leaky bucket
//	10000/day@Europe/Paris       a calendar quota: 10000 per day, midnight to midnight in Paris
//	100/2week@UTC, 1000000/month@America/New_York anchor 15
//	100/min keep-usage           with KeepUsage, written last
//
// The units are s (sec, second), min (minute), h (hour) and day (d). The burst defaults to
// the count, rounded up, at least 1. The rate is the count divided by the unit's seconds,
// so ParseLimit("100/min") equals PerMinute(100). The algorithms are token-bucket,
// fixed-window, sliding-log, sliding-counter and leaky-bucket; without one, the limit's
// Algorithm is DefaultAlgorithm, the limiter's. The limit must be valid (Limit.Validate):
// an error wraps ErrInvalidArgument and names the part it could not read.
//
// A unit followed by @ and a time zone makes a CalendarQuota (see Period): the count, a
// whole number, per day (d), week (w) or month (mo), or per several ("2week"), in that
// zone, which ParseLimit loads (time.LoadLocation); "anchor" sets a month's first day.
func ParseLimit(s string) (Limit, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return Limit{}, fmt.Errorf("%w: empty text", errInvalidLimit)
	}
	count, unit, ok := strings.Cut(fields[0], "/")
	if !ok {
		return Limit{}, fmt.Errorf("%w: %q: %q is not a count per unit, such as 100/min", errInvalidLimit, s, fields[0])
	}
	n, err := strconv.ParseFloat(count, 64)
	if err != nil || math.IsNaN(n) || math.IsInf(n, 0) || n <= 0 {
		return Limit{}, fmt.Errorf("%w: %q: count %q is not a number greater than zero", errInvalidLimit, s, count)
	}
	if strings.Contains(unit, "@") {
		return parseQuota(s, n, unit, fields[1:])
	}
	seconds, ok := unitSeconds(unit)
	if !ok {
		if periodUnitNamed(strings.TrimLeft(unit, "0123456789")) != 0 {
			return Limit{}, fmt.Errorf("%w: %q: %q is a calendar period: a quota names its time zone, as in %s@UTC",
				errInvalidLimit, s, unit, fields[0])
		}
		return Limit{}, fmt.Errorf("%w: %q: unknown unit %q (s, min, h or day; a calendar quota: day, week or month@zone)", errInvalidLimit, s, unit)
	}
	l := Limit{Rate: n / seconds, Burst: defaultBurst(n)}
	if n > maxBurst {
		l.Burst = maxBurst + 1 // refused by Validate below, with the burst named
	}
	rest := fields[1:]
	if n := len(rest); n > 0 && rest[n-1] == keepUsageName {
		l.KeepUsage, rest = true, rest[:n-1]
	}
	for len(rest) > 0 {
		if a, ok := algorithmNamed(rest[0]); ok {
			if l.Algorithm != DefaultAlgorithm {
				return Limit{}, fmt.Errorf("%w: %q: a second algorithm %q", errInvalidLimit, s, rest[0])
			}
			l.Algorithm, rest = a, rest[1:]
			continue
		}
		if len(rest) < 2 {
			if k := rest[0]; k != "burst" && k != "warm-up" && k != "warmup" {
				return Limit{}, fmt.Errorf("%w: %q: unknown algorithm %q (%s)",
					errInvalidLimit, s, k, strings.Join(algorithmNames[TokenBucket:], ", "))
			}
			return Limit{}, fmt.Errorf("%w: %q: %q has no value", errInvalidLimit, s, rest[0])
		}
		switch key, value := rest[0], rest[1]; key {
		case "burst":
			b, err := strconv.Atoi(value)
			if err != nil {
				return Limit{}, fmt.Errorf("%w: %q: burst %q is not a whole number", errInvalidLimit, s, value)
			}
			l.Burst = b
		case "warm-up", "warmup":
			d, err := time.ParseDuration(value)
			if err != nil {
				return Limit{}, fmt.Errorf("%w: %q: warm-up %q is not a duration such as 30s", errInvalidLimit, s, value)
			}
			l.Warmup = d
		default:
			return Limit{}, fmt.Errorf("%w: %q: unknown part %q (burst, warm-up, an algorithm: %s, or a last %s)",
				errInvalidLimit, s, key, strings.Join(algorithmNames[TokenBucket:], ", "), keepUsageName)
		}
		rest = rest[2:]
	}
	if err := l.Validate(); err != nil {
		return Limit{}, fmt.Errorf("%w (in %q)", err, s)
	}
	return l, nil
}

// keepUsageName is the last word of the text of a Limit with KeepUsage.
const keepUsageName = "keep-usage"

// algorithmNamed returns the algorithm whose name in a limit's text is name.
func algorithmNamed(name string) (Algorithm, bool) {
	for a, n := range algorithmNames {
		if n != "" && n == name {
			return Algorithm(a), true
		}
	}
	return DefaultAlgorithm, false
}

func unitSeconds(unit string) (float64, bool) {
	for _, u := range units {
		if unit == u.name {
			return u.seconds, true
		}
		for _, a := range u.aliases {
			if unit == a {
				return u.seconds, true
			}
		}
	}
	return 0, false
}

// String writes l as ParseLimit reads it: as a whole count per unit when one reads back to
// exactly l.Rate (ParseLimit divides the count by the unit's seconds), preferring the unit
// whose count is also the Burst, so that the burst need not be written, then the smallest
// unit (second, minute, hour, day): "10/s", "1000/min", "60/min" (Rate 1, Burst 60),
// "1/s burst 2". A rate that no unit holds a whole number of is written in the first unit
// in which it is at least 1, else per second, in the fewest digits that read back to
// exactly l.Rate ("7.40740734/min burst 3"). The burst, the warm-up, the algorithm and
// KeepUsage are written only when they are not the default: "10/s burst 20", "10/s warm-up
// 30s", "100/min sliding-log", "100/min keep-usage"; a quota as "10000/day@Europe/Paris".
// ParseLimit(l.String()) == l for every valid l (but that a quota's Count or Anchor of 1
// reads back as 0, the same period). An invalid l is written all the same ("0/s burst 0",
// "1/s Algorithm(9)"), for error messages.
func (l Limit) String() string {
	if l == Unlimited {
		return "unlimited"
	}
	if l.Algorithm == CalendarQuota || l.Period != (Period{}) {
		return l.quotaString()
	}
	s, count := rateText(l.Rate, l.Burst)
	if count <= 0 || math.IsNaN(count) || math.IsInf(count, 0) || l.Burst != defaultBurst(count) {
		s += " burst " + strconv.Itoa(l.Burst)
	}
	if l.Warmup != 0 {
		s += " warm-up " + l.Warmup.String()
	}
	switch {
	case l.Algorithm == DefaultAlgorithm:
	case l.Algorithm.known():
		s += " " + algorithmNames[l.Algorithm]
	default:
		s += " " + l.Algorithm.String()
	}
	if l.KeepUsage {
		s += " " + keepUsageName
	}
	return s
}

// rateText writes rate as a count per unit, as String does, with the count it wrote.
func rateText(rate float64, burst int) (string, float64) {
	if !(rate > 0) || math.IsInf(rate, 1) {
		return strconv.FormatFloat(rate, 'g', -1, 64) + "/s", rate
	}
	whole, first := -1, -1
	for i, u := range units {
		// ParseLimit computes the rate as count/seconds: the count to write is the one
		// whose quotient is rate, if a whole one is. Rate·seconds may be a rounding off it
		// (1000/60·60 is 1000.0000000000001).
		if c := math.Round(rate * u.seconds); c >= 1 && c <= 1<<53 && c/u.seconds == rate {
			if defaultBurst(c) == burst {
				return strconv.FormatFloat(c, 'f', -1, 64) + "/" + u.name, c
			}
			if whole < 0 {
				whole = i
			}
		}
		if c := rate * u.seconds; first < 0 && c >= 1 && c <= 1<<53 && c/u.seconds == rate {
			first = i
		}
	}
	if whole >= 0 {
		c := math.Round(rate * units[whole].seconds)
		return strconv.FormatFloat(c, 'f', -1, 64) + "/" + units[whole].name, c
	}
	count, unit := rate, "s"
	if first >= 0 {
		count, unit = rate*units[first].seconds, units[first].name
	}
	return strconv.FormatFloat(count, 'g', -1, 64) + "/" + unit, count
}

// defaultBurst is the burst ParseLimit gives a count that names none: the count rounded
// up, at least 1.
func defaultBurst(count float64) int { return int(max(math.Ceil(count), 1)) }

// MarshalText returns l.String(), or an error wrapping ErrInvalidArgument for an invalid l;
// the zero Limit, which middleware reads as "not limited", is the empty text. With
// UnmarshalText it makes a Limit a flag (flag.TextVar), a JSON or YAML string, an
// environment variable.
func (l Limit) MarshalText() ([]byte, error) {
	if l == (Limit{}) {
		return nil, nil
	}
	if err := l.Validate(); err != nil {
		return nil, err
	}
	return []byte(l.String()), nil
}

// UnmarshalText sets l to ParseLimit(text), or to the zero Limit for an empty text.
func (l *Limit) UnmarshalText(text []byte) error {
	if len(strings.TrimSpace(string(text))) == 0 {
		*l = Limit{}
		return nil
	}
	parsed, err := ParseLimit(string(text))
	if err != nil {
		return err
	}
	*l = parsed
	return nil
}
