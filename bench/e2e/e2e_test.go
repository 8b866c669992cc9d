package e2e_test

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit/bench/e2e"
)

// TestMain serves a variant when the smoke test runs this binary as a server (E2E_SERVE),
// with the flags Config.Server is given.
func TestMain(m *testing.M) {
	if os.Getenv("E2E_SERVE") == "" {
		os.Exit(m.Run())
	}
	args := os.Args[1:]
	flag := func(name string) string {
		if i := slices.Index(args, name); i >= 0 && i+1 < len(args) {
			return args[i+1]
		}
		return ""
	}
	if err := e2e.Serve(flag("-variant"), flag("-redis"), os.Stdin, os.Stdout); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	os.Exit(0)
}

// TestSmoke runs a short comparison: ours beside httprate on net/http with the header key,
// allowed and denied, ours on Gin with the IP key, and ours and ulule on Redis, denied;
// every answer is checked by the load generator, and every sample must have measured
// requests, the server's CPU time and latencies. Figures are not checked: the machine is
// shared.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers")
	}
	t.Setenv("E2E_SERVE", "1")
	cfg := e2e.Config{
		Rounds: 1,
		Load:   e2e.Load{Conns: 4, Users: 200, Warmup: 50 * time.Millisecond, Duration: 300 * time.Millisecond},
		Server: []string{os.Args[0]},
	}
	var samples []e2e.Sample
	for _, only := range []e2e.Variant{
		{Framework: "http", Backend: "local", Key: "header", Limiter: "ours,httprate"},
		{Framework: "gin", Backend: "local", Key: "ip", Traffic: "deny", Limiter: "ours"},
		{Framework: "http", Backend: "redis", Key: "ip", Traffic: "deny", Limiter: "ours,ulule"},
	} {
		cfg.Only = only
		s, err := e2e.Run(context.Background(), cfg)
		require.NoError(t, err, "%v", only)
		samples = append(samples, s...)
	}
	var names []string
	for _, s := range samples {
		names = append(names, s.Variant.String())
		assert.Positive(t, s.Requests, "%v", s.Variant)
		assert.Positive(t, s.ServerCPU, "%v", s.Variant)
		assert.Positive(t, s.Quantile(0.99), "%v", s.Variant)
	}
	assert.Equal(t, []string{
		"http/local/header/allow/ours", "http/local/header/allow/httprate",
		"http/local/header/deny/ours", "http/local/header/deny/httprate",
		"gin/local/ip/deny/ours",
		"http/redis/ip/deny/ours", "http/redis/ip/deny/ulule",
	}, names)

	var out bytes.Buffer
	e2e.Report(&out, samples)
	assert.Contains(t, out.String(), "| http / header / deny | httprate |")
	assert.Equal(t, 2, strings.Count(out.String(), "backend:")) // one table per backend
}

// TestVariants: the variants are those the peers have middlewares for, and the handler
// alone only for allowed traffic.
func TestVariants(t *testing.T) {
	assert.Len(t, e2e.Variants(e2e.Variant{}), 2*(2*3-1)+2*(2*6-1)+4*2+4*2)
	_, err := e2e.ParseVariant("gin/local/header/allow/httprate")
	assert.Error(t, err)
	_, err = e2e.ParseVariant("http/local/ip/deny/none")
	assert.Error(t, err)
	v, err := e2e.ParseVariant("http/redis/header/deny/ulule")
	require.NoError(t, err)
	assert.Equal(t, "http/redis/header/deny/ulule", v.String())
}
