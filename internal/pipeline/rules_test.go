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
// limiter can decide: the check of one without refuses it, naming the policy. (A Rules
// without rules.WithConcurrency refuses such a file itself; the set here is compiled apart,
// as a middleware that takes its permits from elsewhere would be given it.)
func TestCheckRulesConcurrency(t *testing.T) {
	permits := local.New()
	t.Cleanup(func() { _ = permits.Close() })
	doc := rules.Document{File: "f.json", Default: "upload",
		Policies: []rules.PolicyDoc{{Name: "upload", Limits: []string{"10/min"}, Concurrency: 2}}}
	set, err := rules.Compile(doc, nil, rules.WithConcurrency(permits))
	require.NoError(t, err)

	for name, c := range map[string]struct {
		rules *rules.Rules
		want  string // "" for none
	}{
		"without permits": {rules.New(nil), `x: policy "upload": concurrency 2 needs a concurrency limiter`},
		"with permits":    {rules.New(nil, rules.WithConcurrency(permits)), ""},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := pipeline.New("x: ", localLimiter(t), &pipeline.Options[int]{Rules: c.rules}, func(int, error) error { return nil })
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
