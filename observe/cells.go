package observe

import "github.com/sluice-go/ratelimit/priority"

// A Cell is one count of a metric observer's table of rate-limit decisions: the decisions
// of one priority, one outcome, shadow or not, and for an error its kind. otelmetrics and
// prommetrics keep a table of NumCells counts per (policy, backend) series, indexed by
// CellOf, and export each cell with the attributes of CellAt.
type Cell struct {
	Priority priority.Level
	Outcome  Outcome
	Shadow   bool
	// Kind is the error's kind when Outcome is OutcomeError (KindNone for an error of no
	// known kind, exported as ErrorType says), and KindNone otherwise.
	Kind ErrorKind
}

// NumErrorKinds is the number of ErrorKind values, KindNone to KindClosed.
const NumErrorKinds = int(KindClosed) + 1

// numPriorities is the number of priority.Level values, Critical to Sheddable.
const numPriorities = int(priority.Sheddable) + 1

// cellsPerRow is the number of cells of one priority and shadow flag: allowed, denied, and
// an error of each kind.
const cellsPerRow = 2 + NumErrorKinds

// NumCells is the number of cells: CellOf's index is in [0, NumCells).
const NumCells = numPriorities * 2 * cellsPerRow

// CellOf returns the index of d's cell, and d's outcome as counted: a priority out of range
// counts as the nearest one (as priority.With takes it), an outcome that is
// neither allowed nor denied as an error, and an error kind out of range as KindNone.
func CellOf(d Decision) (index int, out Outcome) {
	row := min(max(int(d.Priority), 0), numPriorities-1) * 2
	if d.Shadow {
		row++
	}
	switch out = d.Outcome; out {
	case OutcomeAllowed, OutcomeDenied:
		return row*cellsPerRow + int(out), out
	}
	kind := int(d.ErrorKind)
	if kind >= NumErrorKinds {
		kind = int(KindNone)
	}
	return row*cellsPerRow + 2 + kind, OutcomeError
}

// PermitCellOf returns the index of the cell of d, a concurrency limit's decision
// (Decision.Concurrency): counted by outcome (and an error's kind) alone, so always in a
// cell of priority 0 and no shadow, whatever d's.
func PermitCellOf(d Decision) int {
	cell, _ := CellOf(Decision{Outcome: d.Outcome, ErrorKind: d.ErrorKind})
	return cell
}

// CellAt returns the cell of index i, in [0, NumCells).
func CellAt(i int) Cell {
	row, slot := i/cellsPerRow, i%cellsPerRow
	c := Cell{Priority: priority.Level(row / 2), Shadow: row%2 == 1}
	if slot < 2 {
		c.Outcome = Outcome(slot)
	} else {
		c.Outcome, c.Kind = OutcomeError, ErrorKind(slot-2)
	}
	return c
}

// ErrorType returns the value of the error.type attribute (error_type label) of an error of
// kind k: its String, and OtherSeries for KindNone (an error of no known kind).
func ErrorType(k ErrorKind) string {
	if k == KindNone {
		return OtherSeries
	}
	return k.String()
}
