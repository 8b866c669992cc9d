package pipeline_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit/concurrency/local"
	"github.com/sluice-go/ratelimit/internal/pipeline"
	"github.com/sluice-go/ratelimit/rules"
)

// A set whose policy has a concurrency is one that only a middleware with a concurrency
// limiter (WithConcurrency) can decide: the check of one without refuses it, naming the
// policy.
func TestCheckRulesConcurrency(t *testing.T) {
	permits := local.New()
	t.Cleanup(func() { _ = permits.Close() })
	doc := rules.Document{File: "f.json", Default: "upload",
		Policies: []rules.PolicyDoc{{Name: "upload", Limits: []string{"10/min"}, Concurrency: 2}}}
	set, err := rules.Compile(doc, nil)
	require.NoError(t, err)

	for name, c := range map[string]struct {
		opts *pipeline.Options[int]
		want string // "" for none
	}{
		"without permits": {&pipeline.Options[int]{}, `x: policy "upload": concurrency 2 needs a concurrency limiter (WithConcurrency)`},
		"with permits":    {&pipeline.Options[int]{Concurrency: permits, InFlight: func(int) int { return 1 }}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			c.opts.Rules = rules.New(nil)
			p, err := pipeline.New("x: ", localLimiter(t), c.opts, func(int, error) error { return nil })
			require.NoError(t, err)
			err = pipeline.CheckRules(p, set)
			if c.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, c.want)
		})
	}
}
