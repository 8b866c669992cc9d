package pipeline

import (
	"time"

	"github.com/sluice-go/ratelimit/rules"
)

// SetShadowBudget sets the ShadowBudget of the pipelines built from now on, and returns a
// function that restores it.
func SetShadowBudget(d time.Duration) (restore func()) {
	old := shadowBudget
	shadowBudget = d
	return func() { shadowBudget = old }
}

// CheckRules is p's check of a set of rules (see rules.Rules.Require).
func CheckRules[R any](p *Pipeline[R], s *rules.Set) error { return p.checkRules(s) }
