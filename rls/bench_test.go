package rls

import (
	"context"
	"strconv"
	"testing"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit/local"
)

// BenchmarkShouldRateLimit decides requests of three descriptors (a user, an org, a path
// under a wildcard) on the in-memory backend, over 1000 users, all allowed.
func BenchmarkShouldRateLimit(b *testing.B) {
	c, err := Parse(File{Name: "bench.yaml", Data: []byte(`domain: api
descriptors:
  - key: user
    rate_limit: {unit: second, requests_per_unit: 1000000}
  - key: org
    rate_limit: {unit: second, requests_per_unit: 1000000}
  - key: path
    value: /v1/*
    rate_limit: {unit: second, requests_per_unit: 1000000}
`)})
	require.NoError(b, err)
	l := local.New()
	defer l.Close()
	s, err := New(l, c)
	require.NoError(b, err)
	reqs := make([]*pb.RateLimitRequest, 1000)
	for i := range reqs {
		reqs[i] = rq("api", 0, desc("user", "u"+strconv.Itoa(i)), desc("org", "o"+strconv.Itoa(i%10)), desc("path", "/v1/items"))
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			r, err := s.ShouldRateLimit(ctx, reqs[i%len(reqs)])
			if err != nil || r.GetOverallCode() != ok {
				b.Fatal(err, r.GetOverallCode())
			}
			i++
		}
	})
}
