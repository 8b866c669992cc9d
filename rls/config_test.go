package rls

import (
	"os"
	"path/filepath"
	"testing"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
)

// entries builds a descriptor's entries from key, value pairs.
func entries(kv ...string) []*rlv3.RateLimitDescriptor_Entry {
	var es []*rlv3.RateLimitDescriptor_Entry
	for i := 0; i+1 < len(kv); i += 2 {
		es = append(es, &rlv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return es
}

const (
	second = pb.RateLimitResponse_RateLimit_SECOND
	minute = pb.RateLimitResponse_RateLimit_MINUTE
	hour   = pb.RateLimitResponse_RateLimit_HOUR
	day    = pb.RateLimitResponse_RateLimit_DAY
	week   = pb.RateLimitResponse_RateLimit_WEEK
	month  = pb.RateLimitResponse_RateLimit_MONTH
	year   = pb.RateLimitResponse_RateLimit_YEAR
)

// matched is what a table expects of a lookup: no limit (the zero matched), or a rule's
// numbers and path, and the shared patterns.
type matched struct {
	rpu       uint32
	unit      pb.RateLimitResponse_RateLimit_Unit
	path      string
	unlimited bool
	shared    []string
}

func TestLookupShop(t *testing.T) {
	c, err := Load("testdata/shop.yaml")
	require.NoError(t, err)
	assert.Equal(t, []string{"shop"}, c.Domains())
	cases := []struct {
		name    string
		entries []*rlv3.RateLimitDescriptor_Entry
		want    matched
	}{
		{"no entries", nil, matched{}},
		{"a key unknown at the first level", entries("nope", "x"), matched{}},
		{"a level without a limit of its own", entries("tenant", "acme"), matched{}},
		{"another value of a level that has only one", entries("tenant", "other"), matched{}},
		{"a second level's key-only default", entries("tenant", "acme", "plan", "free"),
			matched{rpu: 4, unit: second, path: "shop.tenant_acme.plan"}},
		{"a second level's value override", entries("tenant", "acme", "plan", "gold"),
			matched{rpu: 40, unit: second, path: "shop.tenant_acme.plan_gold"}},
		{"more entries than the tree is deep", entries("tenant", "acme", "plan", "gold", "x", "y"), matched{}},
		{"a key-only default at the first level", entries("route", "/cart"),
			matched{rpu: 20, unit: minute, path: "shop.route"}},
		{"an empty value goes to the key-only default", entries("route", ""),
			matched{rpu: 20, unit: minute, path: "shop.route"}},
		{"a value override at the first level", entries("route", "/checkout"),
			matched{rpu: 6, unit: minute, path: "shop.route_/checkout"}},
		{"an exempt value: neither a limit nor children", entries("route", "/health"), matched{}},
		{"hour", entries("client", "10.0.0.1"), matched{rpu: 3, unit: hour, path: "shop.client"}},
		{"day, with a name", entries("export", "csv"), matched{rpu: 2, unit: day, path: "shop.export"}},
		{"a limit on a level with children, by one entry", entries("region", "eu"),
			matched{rpu: 100, unit: day, path: "shop.region_eu"}},
		{"its child", entries("region", "eu", "zone", "eu-1"),
			matched{rpu: 7, unit: day, path: "shop.region_eu.zone_eu-1"}},
		{"a child it does not have", entries("region", "eu", "zone", "eu-2"), matched{}},
		{"unlimited", entries("internal", "batch"), matched{unlimited: true, path: "shop.internal"}},
		{"week", entries("report", "q1"), matched{rpu: 9, unit: week, path: "shop.report"}},
		{"month, in capitals", entries("invoice", "x"), matched{rpu: 30, unit: month, path: "shop.invoice"}},
		{"year, mixed case", entries("archive", "x"), matched{rpu: 365, unit: year, path: "shop.archive"}},
		{"zero requests per unit", entries("banned", "x"), matched{rpu: 0, unit: second, path: "shop.banned"}},
	}
	top, ok := c.domain("shop")
	require.True(t, ok)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assertMatch(t, tc.want, lookup(top, tc.entries))
		})
	}
	_, ok = c.domain("elsewhere")
	assert.False(t, ok, "an unknown domain")
}

func assertMatch(t *testing.T, want matched, m match) {
	t.Helper()
	if want.path == "" {
		assert.Nil(t, m.rule, "no limit")
		return
	}
	require.NotNil(t, m.rule)
	assert.Equal(t, want.rpu, m.rule.RequestsPerUnit)
	assert.Equal(t, want.unit, m.rule.Unit)
	assert.Equal(t, want.path, m.rule.Path)
	assert.Equal(t, want.unlimited, m.rule.Unlimited)
	assert.Equal(t, want.shared, m.shared)
}

func TestLookupWildcards(t *testing.T) {
	c, err := Load("testdata/wild.yaml")
	require.NoError(t, err)
	top, _ := c.domain("wild")
	cases := []struct {
		name    string
		entries []*rlv3.RateLimitDescriptor_Entry
		want    matched
	}{
		{"a trailing wildcard", entries("path", "/api/users"), matched{rpu: 11, unit: minute, path: "wild.path_/api/*"}},
		{"* matches the empty run", entries("path", "/api/"), matched{rpu: 11, unit: minute, path: "wild.path_/api/*"}},
		{"an exact value wins over a wildcard", entries("path", "/api/admin"),
			matched{rpu: 1, unit: minute, path: "wild.path_/api/admin"}},
		{"no prefix, no match", entries("path", "/v2/api/x"), matched{}},
		{"a wildcard inside a value", entries("host", "www2.example"),
			matched{rpu: 12, unit: minute, path: "wild.host_www*.example"}},
		{"empty middle", entries("host", "www.example"), matched{rpu: 12, unit: minute, path: "wild.host_www*.example"}},
		{"the suffix is missing", entries("host", "www2.example.org"), matched{}},
		{"prefix and suffix overlap", entries("sku", "ac"), matched{rpu: 14, unit: minute, path: "wild.sku_a*"}},
		{"prefix and suffix would share a byte", entries("code", "aba"), matched{}},
		{"prefix and suffix apart", entries("code", "abba"), matched{rpu: 18, unit: minute, path: "wild.code_ab*ba"}},
		{"several wildcards, in order", entries("sku", "a1b2c"), matched{rpu: 13, unit: minute, path: "wild.sku_a*b*c"}},
		{"several wildcards, adjacent parts", entries("sku", "abc"), matched{rpu: 13, unit: minute, path: "wild.sku_a*b*c"}},
		{"out of order: the next pattern", entries("sku", "acb"), matched{rpu: 14, unit: minute, path: "wild.sku_a*"}},
		{"below a fixed level", entries("team", "red", "user", "bot-7"),
			matched{rpu: 15, unit: minute, path: "wild.team_red.user_bot-*"}},
		{"below another value", entries("team", "blue", "user", "bot-7"), matched{}},
		{"the pattern is matched against the value, not the key", entries("user", "bot-7"), matched{}},
		{"share_threshold", entries("bucket", "logs/a.txt"),
			matched{rpu: 16, unit: hour, path: "wild.bucket_logs/*", shared: []string{"logs/*"}}},
		{"share_threshold on the parent level", entries("org", "org-9", "action", "read"),
			matched{rpu: 17, unit: hour, path: "wild.org_org-*.action", shared: []string{"org-*", ""}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assertMatch(t, tc.want, lookup(top, tc.entries))
		})
	}
}

func TestRuleLimits(t *testing.T) {
	c, err := Load("testdata/shop.yaml")
	require.NoError(t, err)
	top, _ := c.domain("shop")
	cases := []struct {
		entries []*rlv3.RateLimitDescriptor_Entry
		want    ratelimit.Limit
	}{
		// n per unit is a fixed window of the unit: Rate n/unit, Burst n.
		{entries("route", "/cart"), ratelimit.Limit{Rate: 20.0 / 60, Burst: 20, Algorithm: ratelimit.FixedWindow, KeepUsage: true}},
		{entries("report", "x"), ratelimit.Limit{Rate: 9.0 / 604800, Burst: 9, Algorithm: ratelimit.FixedWindow, KeepUsage: true}},
		// A month is 30 days and a year 365, as the reference counts them.
		{entries("invoice", "x"), ratelimit.Limit{Rate: 30.0 / 2592000, Burst: 30, Algorithm: ratelimit.FixedWindow, KeepUsage: true}},
		{entries("archive", "x"), ratelimit.Limit{Rate: 365.0 / 31536000, Burst: 365, Algorithm: ratelimit.FixedWindow, KeepUsage: true}},
		// The algorithm field picks another of the kit's algorithms.
		{entries("trial", "x"), ratelimit.Limit{Rate: 5.0 / 60, Burst: 5, Algorithm: ratelimit.SlidingWindowLog, KeepUsage: true}},
		// Zero requests per unit and unlimited have no limit of the kit: the service answers them.
		{entries("banned", "x"), ratelimit.Limit{}},
		{entries("internal", "x"), ratelimit.Limit{}},
	}
	for _, tc := range cases {
		m := lookup(top, tc.entries)
		require.NotNil(t, m.rule)
		assert.Equal(t, tc.want, m.rule.Limit, m.rule.Path)
	}
	m := lookup(top, entries("export", "x"))
	assert.Equal(t, "exports_daily", m.rule.Name)
	assert.True(t, lookup(top, entries("trial", "x")).rule.Shadow)
	assert.False(t, lookup(top, entries("route", "x")).rule.Shadow)
}

func TestLoadErrors(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		want error
	}{
		{"not YAML", "domain: [", ErrSyntax},
		{"an empty file", "", ErrEmptyDomain},
		{"no domain", "descriptors: []", ErrEmptyDomain},
		{"a misspelled key", "domain: d\ndescriptors:\n  - key: k\n    ratelimit: {unit: second}", ErrUnknownKey},
		{"a misspelled key in rate_limit", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requestsperunit: 5}", ErrUnknownKey},
		{"a key at the wrong level", "domain: d\ndescriptors:\n  - key: k\n    unit: second", ErrUnknownKey},
		{"a key that is not a string", "domain: d\ndescriptors:\n  - key: k\n    0.25: x", ErrKeyType},
		{"a list of something else than maps", "domain: d\ndescriptors:\n  - a\n  - b", ErrValue},
		{"descriptors as a map", "domain: d\ndescriptors: {key: k}", ErrValue},
		{"a negative count", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: -1}", ErrValue},
		{"a count that is not a number", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: many}", ErrValue},
		{"an empty key", "domain: d\ndescriptors:\n  - value: v\n    rate_limit: {unit: second, requests_per_unit: 1}", ErrEmptyKey},
		{"a duplicate key", "domain: d\ndescriptors:\n  - key: k\n  - key: k", ErrDuplicateKey},
		{"a duplicate key and value", "domain: d\ndescriptors:\n  - key: k\n    value: v\n  - key: k\n    value: v", ErrDuplicateKey},
		{"a duplicate pattern", "domain: d\ndescriptors:\n  - key: k\n    value: v*\n  - key: k\n    value: v*", ErrDuplicateKey},
		{"a duplicate below", "domain: d\ndescriptors:\n  - key: a\n    descriptors:\n      - key: k\n      - key: k", ErrDuplicateKey},
		{"an unknown unit", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: fortnight, requests_per_unit: 1}", ErrUnit},
		{"no unit", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {requests_per_unit: 1}", ErrUnit},
		{"unit UNKNOWN", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: unknown, requests_per_unit: 1}", ErrUnit},
		{"unlimited with a unit", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unlimited: true, unit: second}", ErrUnlimitedWithUnit},
		{"replaces itself", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {name: a, unit: second, requests_per_unit: 1, replaces: [{name: a}]}", ErrReplaces},
		{"an empty replaces", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {name: a, unit: second, requests_per_unit: 1, replaces: [{name: ''}]}", ErrReplaces},
		{"share_threshold without a wildcard", "domain: d\ndescriptors:\n  - key: k\n    value: v\n    share_threshold: true", ErrShareThreshold},
		{"quota_mode", "domain: d\ndescriptors:\n  - key: k\n    quota_mode: true", ErrUnsupported},
		{"value_to_metric", "domain: d\ndescriptors:\n  - key: k\n    value_to_metric: true", ErrUnsupported},
		{"metadata", "domain: d\ndescriptors:\n  - key: k\n    metadata: {a: b}", ErrUnsupported},
		{"a wildcard in a key", "domain: d\ndescriptors:\n  - key: k*", ErrUnsupported},
		{"an unknown algorithm", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1, algorithm: magic}", ErrAlgorithm},
		{"an algorithm that is limit text", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1, algorithm: burst 3}", ErrAlgorithm},
		{"two documents", "domain: d\n---\ndomain: e", ErrSyntax},
		{"a shadow_mode that is not a boolean", "domain: d\ndescriptors:\n  - key: k\n    shadow_mode: sometimes", ErrValue},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(File{Name: "x.yaml", Data: []byte(tc.yaml)})
			require.ErrorIs(t, err, tc.want)
			require.ErrorIs(t, err, ErrConfig)
			assert.Contains(t, err.Error(), "x.yaml")
		})
	}
	t.Run("a duplicate domain across files", func(t *testing.T) {
		_, err := Parse(File{Name: "a.yaml", Data: []byte("domain: d")}, File{Name: "b.yaml", Data: []byte("domain: d")})
		require.ErrorIs(t, err, ErrDuplicateDomain)
		assert.Contains(t, err.Error(), "b.yaml:1")
	})
}

func TestLoadDirectory(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600))
	}
	write("b.yaml", "domain: two\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 2}")
	write("a.yml", "domain: one")
	write(".hidden.yaml", "not: [valid")
	write("notes.txt", "not: [valid")
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o700))
	write("sub/c.yaml", "not: [valid")
	c, err := Load(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{"one", "two"}, c.Domains())

	empty, err := Load(t.TempDir())
	require.NoError(t, err)
	assert.Empty(t, empty.Domains())

	_, err = Load(filepath.Join(dir, "missing"))
	require.Error(t, err)
}
