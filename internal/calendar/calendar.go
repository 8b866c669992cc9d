// Package calendar computes the periods of a ratelimit.CalendarQuota: where, in Unix
// microseconds, the day, week or month holding an instant starts and ends in a time zone.
// Every backend, and the conformance suite's model, calls it, so that they agree to the
// microsecond.
package calendar

import (
	"fmt"
	"sync"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
)

// Bounds returns the period of p holding the instant u (Unix µs) in loc, the location of
// p.Zone: [start, end) in Unix µs. A period starts at the local midnight that begins its
// first day, or, where the zone skipped that midnight, at the first instant the day has.
func Bounds(p ratelimit.Period, loc *time.Location, u int64) (start, end int64) {
	y, m, d := time.UnixMicro(u).In(loc).Date()
	count := max(p.Count, 1)
	switch p.Unit {
	case ratelimit.Week:
		// Weeks are counted from Monday 1969-12-29, day −3 of the epoch.
		first := floorDiv(floorDiv(days(y, m, d)+3, 7), count)*7*count - 3
		return midnightOf(first, loc), midnightOf(first+7*count, loc)
	case ratelimit.Month:
		anchor := max(p.Anchor, 1)
		months := (y-1970)*12 + int(m) - 1
		if d < anchor {
			months--
		}
		first := floorDiv(months, count) * count
		return monthStart(first, anchor, loc), monthStart(first+count, anchor, loc)
	}
	first := floorDiv(days(y, m, d), count) * count
	return midnightOf(first, loc), midnightOf(first+count, loc)
}

// days returns the number of the date y-m-d, in days since 1970-01-01.
func days(y int, m time.Month, d int) int {
	return int(floorDiv64(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix(), 86400))
}

// midnightOf returns the start of day number n (see days) in loc, in Unix µs.
func midnightOf(n int, loc *time.Location) int64 {
	y, m, d := time.Unix(int64(n)*86400, 0).UTC().Date()
	return midnight(y, m, d, loc)
}

// monthStart returns the start of the anchor-th day of month number n (months since
// January 1970) in loc, in Unix µs.
func monthStart(n, anchor int, loc *time.Location) int64 {
	return midnight(1970+floorDiv(n, 12), time.Month(n-floorDiv(n, 12)*12+1), anchor, loc)
}

// midnight returns the first instant of the date y-m-d in loc, in Unix µs: its local
// midnight, or, when the zone skipped midnight that day (America/Santiago's changes to
// summer time, at 00:00), the change itself. time.Date gives an instant of the day before
// for a local time that does not exist; the zone it shows ends at the change.
func midnight(y int, m time.Month, d int, loc *time.Location) int64 {
	t := time.Date(y, m, d, 0, 0, 0, 0, loc)
	if ty, tm, td := t.Date(); ty != y || tm != m || td != d {
		_, t = t.ZoneBounds()
	}
	return t.UnixMicro()
}

func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func floorDiv64(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// Nominal returns the length of p's periods in seconds as a policy states it: 86,400 a
// day, 604,800 a week and 2,629,746 a month (a Gregorian year's twelfth), times Count.
// A period's real length differs across a change of offset, and from month to month.
func Nominal(p ratelimit.Period) int64 {
	n := int64(max(p.Count, 1))
	switch p.Unit {
	case ratelimit.Week:
		return 604_800 * n
	case ratelimit.Month:
		return 2_629_746 * n
	}
	return 86_400 * n
}

// Zones loads time zones once: time.LoadLocation reads and parses the database, far
// slower than a decision. It gives each zone a number from 1 on, that a bucket's identity
// can hold in place of the name. The zero Zones is ready; it is safe for concurrent use.
// Only zones the database holds are kept, so it holds a few hundred at most.
type Zones struct {
	m  sync.Map // name → zone
	mu sync.Mutex
	n  uint32
}

type zone struct {
	loc *time.Location
	id  uint32
}

// Load returns the location named name and its number, or an error wrapping
// ratelimit.ErrInvalidArgument for a zone the database lacks.
func (z *Zones) Load(name string) (*time.Location, uint32, error) {
	if v, ok := z.m.Load(name); ok {
		zn := v.(zone)
		return zn.loc, zn.id, nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil || name == "Local" {
		return nil, 0, fmt.Errorf("%w: time zone %q: not in the time zone database (import time/tzdata to embed one)", args.ErrInvalidLimit, name)
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	if v, ok := z.m.Load(name); ok {
		zn := v.(zone)
		return zn.loc, zn.id, nil
	}
	z.n++
	z.m.Store(name, zone{loc, z.n})
	return loc, z.n, nil
}
