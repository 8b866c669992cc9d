package observe_test

import (
	"testing"

	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/priority"
)

// TestCells: every decision has one cell, CellAt gives back what was counted (a priority
// clamped to Critical..Sheddable, an unknown outcome as an error, an unknown error kind as
// KindNone, the kind of an allowed or denied decision dropped), and the valid decisions
// fill the NumCells cells exactly once each.
func TestCells(t *testing.T) {
	seen := make(map[int]observe.Cell)
	for p := priority.Level(-1); p <= priority.Sheddable+1; p++ {
		for _, out := range []observe.Outcome{observe.OutcomeAllowed, observe.OutcomeDenied, observe.OutcomeError, 7} {
			for _, shadow := range []bool{false, true} {
				for kind := observe.ErrorKind(0); kind <= observe.KindClosed+2; kind++ {
					d := observe.Decision{Priority: p, Outcome: out, Shadow: shadow, ErrorKind: kind}
					i, counted := observe.CellOf(d)
					if i < 0 || i >= observe.NumCells {
						t.Fatalf("CellOf(%+v) = %d, out of [0, %d)", d, i, observe.NumCells)
					}
					want := observe.Cell{Priority: min(max(p, priority.Critical), priority.Sheddable), Outcome: out, Shadow: shadow}
					if out != observe.OutcomeAllowed && out != observe.OutcomeDenied {
						want.Outcome = observe.OutcomeError
						if kind <= observe.KindClosed {
							want.Kind = kind
						}
					}
					if got := observe.CellAt(i); got != want || counted != want.Outcome {
						t.Fatalf("CellOf(%+v) = %d, %v; CellAt = %+v, want %+v, %v", d, i, counted, got, want, want.Outcome)
					}
					if prev, ok := seen[i]; ok && prev != want {
						t.Fatalf("cell %d is both %+v and %+v", i, prev, want)
					}
					seen[i] = want
				}
			}
		}
	}
	if len(seen) != observe.NumCells {
		t.Fatalf("%d cells used, want NumCells = %d", len(seen), observe.NumCells)
	}
}

func TestErrorType(t *testing.T) {
	for k, want := range map[observe.ErrorKind]string{
		observe.KindNone: "_OTHER", observe.KindTimeout: "timeout", observe.KindUnavailable: "unavailable",
		observe.KindInvalidInput: "invalid_input", observe.KindCanceled: "canceled", observe.KindClosed: "closed",
	} {
		if got := observe.ErrorType(k); got != want {
			t.Errorf("ErrorType(%v) = %q, want %q", k, got, want)
		}
	}
}

// TestPermitCellOf: a concurrency limit's decision is counted by outcome and error kind
// alone, in the cell of a Critical, enforced decision, whatever its priority and shadow.
func TestPermitCellOf(t *testing.T) {
	for _, tc := range []struct {
		d    observe.Decision
		want observe.Cell
	}{
		{observe.Decision{Priority: priority.Sheddable, Shadow: true, Outcome: observe.OutcomeDenied},
			observe.Cell{Priority: priority.Critical, Outcome: observe.OutcomeDenied}},
		{observe.Decision{Priority: priority.Normal, Outcome: observe.OutcomeError, ErrorKind: observe.KindTimeout},
			observe.Cell{Priority: priority.Critical, Outcome: observe.OutcomeError, Kind: observe.KindTimeout}},
	} {
		if got := observe.CellAt(observe.PermitCellOf(tc.d)); got != tc.want {
			t.Errorf("PermitCellOf(%+v) is the cell %+v, want %+v", tc.d, got, tc.want)
		}
	}
}
