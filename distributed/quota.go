package distributed

import (
	_ "embed"
	"strconv"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/calendar"
)

//go:embed quota.lua
var quotaFile string

var quotaSource = expand(quotaFile)

//go:embed refund_quota.lua
var refundQuotaSource string

// quotaScript decides a ratelimit.CalendarQuota; its keys' tag is "cq". Unlike the other
// algorithms it is not in the algorithms map: a quota's period is its limit's, so it is
// never a limiter's default, and its argument needs the limiter (see Limiter.quota).
var quotaScript = newScriptPair(quotaSource)

// quotaTag names ratelimit.CalendarQuota in the keys of its buckets.
const quotaTag = "cq"

// keepQuotaTag names a quota with KeepUsage in the keys of its buckets, which hold no
// numbers: its count carries to the numbers of each call.
const keepQuotaTag = "cqk"

// keepQuotaScript decides a quota with KeepUsage: quotaScript, reading a count above the
// call's Burst as the count it is (see keep.go).
var keepQuotaScript = newScriptPair(keepQuotaSource)

// newQuota returns how l runs a calendar quota with scripts: l's periods as ARGV[4].
func (l *Limiter) newQuota(tag string, scripts scriptPair) algorithm {
	return algorithm{tag: tag, scripts: scripts, args: l.periodsArg}
}

// periodsArg appends ARGV[4] of quota.lua: the period holding the limiter's clock (the
// test clock, or the system's), the one before and the one after, as
// "start0:start1:start2:end2" in Unix µs, computed in the limit's zone from this process's
// time zone database. The script picks the one that holds Redis's clock.
func (l *Limiter) periodsArg(argv []any, limit ratelimit.Limit) []any {
	now := time.Now()
	switch {
	case l.appClock != nil:
		now = l.appClock()
	case l.now != nil:
		now = l.now()
	}
	loc, _, _ := l.zones.Load(limit.Period.Zone) // check has loaded it
	p := limit.Period
	start, end := calendar.Bounds(p, loc, now.UnixMicro())
	before, _ := calendar.Bounds(p, loc, start-1)
	_, after := calendar.Bounds(p, loc, end)
	b := make([]byte, 0, 68)
	b = strconv.AppendInt(b, before, 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, start, 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, end, 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, after, 10)
	return append(argv, string(b))
}

// appendPeriod appends the period of a quota's key: its count when more than one, unit,
// anchor when not the 1st, and zone, as in "day@Europe/Paris", "2week@UTC",
// "month+15@America/New_York". Count and Anchor of zero and one are one bucket.
func appendPeriod(b []byte, p ratelimit.Period) []byte {
	if p.Count > 1 {
		b = strconv.AppendInt(b, int64(p.Count), 10)
	}
	switch p.Unit {
	case ratelimit.Week:
		b = append(b, "week"...)
	case ratelimit.Month:
		b = append(b, "month"...)
	default:
		b = append(b, "day"...)
	}
	if p.Anchor > 1 {
		b = append(b, '+')
		b = strconv.AppendInt(b, int64(p.Anchor), 10)
	}
	b = append(b, '@')
	return append(b, p.Zone...)
}
