package pipeline

import "time"

// SetShadowBudget sets the ShadowBudget of the pipelines built from now on, and returns a
// function that restores it.
func SetShadowBudget(d time.Duration) (restore func()) {
	old := shadowBudget
	shadowBudget = d
	return func() { shadowBudget = old }
}
