package rulesyaml_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/priority"
	"github.com/sluice-go/ratelimit/rules"
	"github.com/sluice-go/ratelimit/rules/rulesyaml"
)

const file = `version: "7"
default: free
policies:
  login: {limits: [2/min, 10/h], key: client-ip}
  free:
    limits: [3/min]
    key: user
    priority: sheddable
    shadow: true
rules:
  - match: {route: POST /login}
    policy: login
`

var registry = rules.Registry{
	"client-ip": rules.HTTPKey(func(r *http.Request) (string, error) { return "ip:" + r.RemoteAddr, nil }),
	"user":      rules.HTTPKey(func(r *http.Request) (string, error) { return "user:" + r.Header.Get("X-User"), nil }),
}

// YAML reads into the same Document as JSON would, with each policy's and rule's line.
func TestParse(t *testing.T) {
	doc, err := rulesyaml.Parse("rules.yaml", []byte(file))
	require.NoError(t, err)
	assert.Equal(t, rules.Document{
		File: "rules.yaml", Version: "7", Default: "free",
		Policies: []rules.PolicyDoc{
			{Line: 4, Name: "login", Limits: []string{"2/min", "10/h"}, Key: "client-ip"},
			{Line: 5, Name: "free", Limits: []string{"3/min"}, Key: "user", Priority: "sheddable", Shadow: true},
		},
		Rules: []rules.RuleDoc{{Line: 11, Match: rules.Match{Route: "POST /login"}, Policy: "login"}},
	}, doc)
	live := rules.New(registry, rules.WithParser(rulesyaml.Parse))
	require.NoError(t, live.Load("rules.yaml", []byte(file)))
	p, ok := live.Set().Policy("login")
	require.True(t, ok)
	// A policy's limits keep their usage across a reload (ratelimit.Limit.KeepUsage).
	minute, hour := ratelimit.PerMinute(2), ratelimit.PerHour(10)
	minute.KeepUsage, hour.KeepUsage = true, true
	assert.Equal(t, []ratelimit.Limit{minute, hour}, p.Limits)
	p, _ = live.Set().Policy("free")
	assert.Equal(t, []any{priority.Sheddable, true, true}, []any{p.Priority, p.HasPriority, p.Shadow})
}

// Unknown fields, and the mistakes Compile finds, are named by file and line.
func TestErrors(t *testing.T) {
	live := rules.New(registry, rules.WithParser(rulesyaml.Parse))
	cases := map[string]string{
		"version: 1\npolices: {}\n":                                                                        `rules: invalid rules: rules.yaml:2: unknown field "polices" of a file (version, default, policies, rules)`,
		"policies:\n  a:\n    limits: [1/s]\n    burst: 3\n":                                               `rules: invalid rules: rules.yaml:4: policy "a": unknown field "burst" of a policy (limits, key, cost, priority, shadow, concurrency)`,
		"rules:\n  - match: {rout: /x}\n    policy: a\n":                                                   `rules: invalid rules: rules.yaml:2: rule 1: unknown field "rout" of a match (route, method, full_method, header, key)`,
		"policies:\n  a: {limits: [1/s], key: nobody}\n":                                                   `rules: invalid rules: rules.yaml:2: policy "a": key function "nobody" is not registered`,
		"policies:\n  x: {limits: [1/s], key: user}\n  a: {key: user, priority: urgent, concurrency: 2}\n": `rules: invalid rules: rules.yaml:3: policy "a": priority "urgent" is not one of critical, normal, sheddable`,
	}
	// A count is a whole number as written, never a fraction rounded down.
	cases["policies:\n  a:\n    limits: [1/s]\n    cost: 1.9\n"] = `rules: invalid rules: rules.yaml:4: policy "a": "1.9" is not a whole number`
	cases["policies:\n  a: {limits: [1/s], cost: 0.5}\n"] = `rules: invalid rules: rules.yaml:2: policy "a": "0.5" is not a whole number`
	cases["policies:\n  a: {limits: [1/s], cost: 1e0}\n"] = `rules: invalid rules: rules.yaml:2: policy "a": "1e0" is not a whole number`
	cases["policies:\n  a: {concurrency: \"2\"}\n"] = `rules: invalid rules: rules.yaml:2: policy "a": "2" is not a whole number`
	// A rules file is one document: a second, after "---", is refused, not ignored.
	cases["policies:\n  a: {limits: [1/s]}\n---\npolicies:\n  a: {limits: [100/s]}\n"] = `rules: invalid rules: rules.yaml:3: a second document (---): a rules file is one`
	// An empty file, or a prefix of one caught while it is written, has no policies.
	cases[""] = "rules: invalid rules: rules.yaml:1: an empty file"
	cases["# nothing yet\n"] = "rules: invalid rules: rules.yaml:1: an empty file"
	cases["version: \"7\"\ndefault: free\n"] = "rules: invalid rules: rules.yaml:1: no policies (a file read while it was written?)"
	cases["version:"] = "rules: invalid rules: rules.yaml:1: no policies (a file read while it was written?)"
	cases["policies:\n"] = "rules: invalid rules: rules.yaml:1: policies: a map of names to policies is expected"
	for text, want := range cases {
		err := live.Load("rules.yaml", []byte(text))
		require.ErrorIs(t, err, rules.ErrInvalid, text)
		assert.EqualError(t, err, want, text)
	}
}
