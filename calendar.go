package ratelimit

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// PeriodUnit is the unit of a calendar Period.
type PeriodUnit int

const (
	// Day is a calendar day: from one local midnight to the next, 24 hours or, on the day a
	// zone changes its offset, 23, 25 or whatever the change makes it.
	Day PeriodUnit = iota + 1
	// Week is an ISO week: from Monday's local midnight to the next Monday's.
	Week
	// Month is a calendar month: from the local midnight that starts its first day (or its
	// Anchor) to the one that starts the next month's; 28 to 31 days.
	Month
)

// Period is the calendar period of a CalendarQuota: Count units of the calendar of the time
// zone named Zone, each starting at local midnight, wherever that falls in UTC. When the
// zone skips midnight (a change of offset at 00:00), the day starts at the first instant
// it has. Period is comparable; every field is part of a quota's identity.
//
// Periods of several units are counted from the Unix epoch's local date: a Period of
// Count 2 Day starts on every other day from 1970-01-01, of Count 2 Week on every other
// Monday from 1969-12-29, of Count 3 Month on 1 January, April, July and October.
type Period struct {
	// Unit is Day, Week or Month.
	Unit PeriodUnit
	// Count is the number of units in a period, at most 1000; zero means 1 (and one
	// bucket with 1).
	Count int
	// Anchor is, for Month only, the day of the month on which periods start, 1 to 28: 15
	// for a billing month from the 15th to the 14th of the next. Zero means the 1st (and
	// one bucket with 1). It must be zero for Day and Week.
	Anchor int
	// Zone is the name of the time zone in the IANA database, such as "Europe/Paris", or
	// "UTC". "Local", which differs from machine to machine, is refused. Limit.Validate and
	// the limiters load the zone with time.LoadLocation, so the program needs the time zone
	// database: the system's, or the copy embedded by importing time/tzdata.
	Zone string
}

// Quota returns a CalendarQuota of n per period p: Limit{Burst: n, Algorithm:
// CalendarQuota, Period: p}.
func Quota(n int, p Period) Limit { return Limit{Burst: n, Algorithm: CalendarQuota, Period: p} }

// validateQuota is Validate for a limit that is a quota or has a Period.
func (l Limit) validateQuota() error {
	switch {
	case l.Algorithm != CalendarQuota:
		return fmt.Errorf("%w: a period with %v: only CalendarQuota has one", errInvalidLimit, l.Algorithm)
	case l.Rate != 0:
		return fmt.Errorf("%w: rate %v on a calendar quota, which has none: it must be zero", errInvalidLimit, l.Rate)
	case l.Burst < 1 || l.Burst > maxBurst:
		return fmt.Errorf("%w: quota %d is not between 1 and 2^52", errInvalidLimit, l.Burst)
	case l.Warmup != 0:
		return fmt.Errorf("%w: a warm-up on a calendar quota", errInvalidLimit)
	}
	p := l.Period
	switch {
	case p.Unit < Day || p.Unit > Month:
		return fmt.Errorf("%w: period unit %d is not Day, Week or Month", errInvalidLimit, p.Unit)
	case p.Count < 0 || p.Count > maxPeriodCount:
		return fmt.Errorf("%w: period count %d is not between 0 (one) and 1000", errInvalidLimit, p.Count)
	case p.Unit != Month && p.Anchor != 0:
		return fmt.Errorf("%w: an anchor on a period of days or weeks: only months have one", errInvalidLimit)
	case p.Anchor < 0 || p.Anchor > 28:
		return fmt.Errorf("%w: anchor %d is not a day of the month between 1 and 28", errInvalidLimit, p.Anchor)
	case !zoneName(p.Zone):
		return fmt.Errorf("%w: time zone %q is not the name of a zone such as Europe/Paris or UTC", errInvalidLimit, p.Zone)
	case !zoneFound(p.Zone):
		return fmt.Errorf("%w: time zone %q is not in the time zone database (import time/tzdata to embed one)", errInvalidLimit, p.Zone)
	}
	return nil
}

// zonesFound holds the names of the zones time.LoadLocation has found, so that Validate,
// which every decision of a quota calls, reads the time zone database once per zone rather
// than on every call. It is the package's one piece of mutable state, a memo of a lookup
// whose answer does not change; only zones found are kept, so it holds a few hundred names
// at most, whatever limits are validated.
var zonesFound sync.Map

// zoneFound reports whether the time zone database has the zone named name.
func zoneFound(name string) bool {
	if _, ok := zonesFound.Load(name); ok {
		return true
	}
	if _, err := time.LoadLocation(name); err != nil {
		return false
	}
	zonesFound.Store(name, struct{}{})
	return true
}

// maxPeriodCount is the largest Period.Count.
const maxPeriodCount = 1000

// zoneName reports whether name can be an IANA zone name: 1 to 64 letters, digits and
// "/_+-", not "Local" (whether the database has it is zoneFound's to say).
func zoneName(name string) bool {
	if name == "" || len(name) > 64 || name == "Local" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("/_+-", c) >= 0) {
			return false
		}
	}
	return true
}

// periodUnits are the names of the units of a quota's text, indexed by PeriodUnit, with
// their aliases.
var periodUnits = [...][]string{Day: {"day", "d"}, Week: {"week", "w"}, Month: {"month", "mo"}}

// periodUnitNamed returns the unit name names in a quota's text, or 0.
func periodUnitNamed(name string) PeriodUnit {
	for u, names := range periodUnits {
		for _, n := range names {
			if name == n {
				return PeriodUnit(u)
			}
		}
	}
	return 0
}

// quotaString writes a quota as ParseLimit reads it: "10000/day@Europe/Paris",
// "100/2week@UTC", "1000000/month@UTC anchor 15". Fields a quota must not have are
// written too, for error messages.
func (l Limit) quotaString() string {
	p := l.Period
	s := strconv.Itoa(l.Burst) + "/"
	if p.Count > 1 {
		s += strconv.Itoa(p.Count)
	}
	if p.Unit >= Day && p.Unit <= Month {
		s += periodUnits[p.Unit][0]
	} else {
		s += "PeriodUnit(" + strconv.Itoa(int(p.Unit)) + ")"
	}
	s += "@" + p.Zone
	if p.Anchor > 1 {
		s += " anchor " + strconv.Itoa(p.Anchor)
	}
	if l.Algorithm != CalendarQuota {
		s += " " + l.Algorithm.String()
	}
	if l.Rate != 0 {
		s += " rate " + strconv.FormatFloat(l.Rate, 'g', -1, 64)
	}
	if l.Warmup != 0 {
		s += " warm-up " + l.Warmup.String()
	}
	if l.KeepUsage {
		s += " " + keepUsageName
	}
	return s
}

// parseQuota is ParseLimit for a quota's text s: a count of n per unit "[count]unit@zone",
// then rest, where only an anchor may follow.
func parseQuota(s string, n float64, unit string, rest []string) (Limit, error) {
	if n != float64(int64(n)) || n > maxBurst {
		return Limit{}, fmt.Errorf("%w: %q: a quota's count %v is not a whole number of at most 2^52", errInvalidLimit, s, n)
	}
	keep := false
	if n := len(rest); n > 0 && rest[n-1] == keepUsageName {
		keep, rest = true, rest[:n-1]
	}
	p, err := parsePeriod(s, unit)
	if err != nil {
		return Limit{}, err
	}
	if p.Anchor, err = parseAnchor(s, p.Unit, rest); err != nil {
		return Limit{}, err
	}
	l := Quota(int(n), p)
	l.KeepUsage = keep
	if err := l.Validate(); err != nil {
		return Limit{}, fmt.Errorf("%w (in %q)", err, s)
	}
	return l, nil
}

// parsePeriod reads the period "[count]unit@zone" of a quota's text s.
func parsePeriod(s, unit string) (Period, error) {
	name, zone, _ := strings.Cut(unit, "@")
	digits := strings.IndexFunc(name, func(r rune) bool { return r < '0' || r > '9' })
	p := Period{Zone: zone}
	if digits > 0 {
		c, err := strconv.Atoi(name[:digits])
		if err != nil || c < 1 || c > maxPeriodCount {
			return Period{}, fmt.Errorf("%w: %q: period count %q is not between 1 and 1000", errInvalidLimit, s, name[:digits])
		}
		if c > 1 {
			p.Count = c
		}
		name = name[digits:]
	}
	if p.Unit = periodUnitNamed(name); p.Unit == 0 {
		return Period{}, fmt.Errorf("%w: %q: unknown period %q (day, week or month)", errInvalidLimit, s, name)
	}
	if !zoneName(zone) {
		return Period{}, fmt.Errorf("%w: %q: time zone %q is not the name of a zone such as Europe/Paris or UTC", errInvalidLimit, s, zone)
	}
	return p, nil
}

// parseAnchor reads the anchor of a quota's text s over periods of unit from rest, the words
// after its period ("anchor DAY", or none), and returns the Period's Anchor.
func parseAnchor(s string, unit PeriodUnit, rest []string) (anchor int, err error) {
	for ; len(rest) > 0; rest = rest[2:] {
		if len(rest) < 2 || rest[0] != "anchor" {
			return 0, fmt.Errorf("%w: %q: %q on a calendar quota (only anchor DAY)", errInvalidLimit, s, rest[0])
		}
		a, err := strconv.Atoi(rest[1])
		if err != nil || a < 1 || a > 28 || unit != Month {
			return 0, fmt.Errorf("%w: %q: anchor %q is not a day of the month between 1 and 28, on a period of months", errInvalidLimit, s, rest[1])
		}
		anchor = a
		if a == 1 {
			anchor = 0 // the same period: one way to write it
		}
	}
	return anchor, nil
}
