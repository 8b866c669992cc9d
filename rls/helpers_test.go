package rls

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/sluice-go/ratelimit/local"
)

// t0 is the start of every timeline: 10.5 s into a minute (and an hour, and a day), so
// that a fixed window of a minute has 50 whole seconds to go (60 − 10), of an hour 3590.
var t0 = time.Date(2030, 1, 1, 0, 0, 10, 500_000_000, time.UTC)

// testClock is a clock moved by hand.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *testClock { return &testClock{now: t0} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// newLocal returns an in-memory limiter on clock, closed by t's cleanup.
func newLocal(t testing.TB, clock *testClock) *local.Limiter {
	l := local.New(local.WithClock(clock.Now))
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// load loads a configuration of testdata, failing t on an error.
func load(t testing.TB, path string) *Config {
	c, err := Load(path)
	require.NoError(t, err)
	return c
}

// desc builds a descriptor from key, value pairs.
func desc(kv ...string) *rlv3.RateLimitDescriptor {
	return &rlv3.RateLimitDescriptor{Entries: entries(kv...)}
}

// hits sets a descriptor's own hits_addend.
func hits(d *rlv3.RateLimitDescriptor, n uint64) *rlv3.RateLimitDescriptor {
	d.HitsAddend = wrapperspb.UInt64(n)
	return d
}

// negative makes a descriptor a refund of n.
func negative(d *rlv3.RateLimitDescriptor, n uint64) *rlv3.RateLimitDescriptor {
	d.HitsAddend, d.IsNegativeHits = wrapperspb.UInt64(n), true
	return d
}

// rq builds a request of domain with a request-level hits_addend (0: unset).
func rq(domain string, hitsAddend uint32, ds ...*rlv3.RateLimitDescriptor) *pb.RateLimitRequest {
	return &pb.RateLimitRequest{Domain: domain, Descriptors: ds, HitsAddend: hitsAddend}
}

// The codes.
const (
	ok   = pb.RateLimitResponse_OK
	over = pb.RateLimitResponse_OVER_LIMIT
)

// st is a descriptor's status with a limit: code, requests per unit and unit, remaining,
// and duration until reset in seconds.
func st(code pb.RateLimitResponse_Code, rpu uint32, unit pb.RateLimitResponse_RateLimit_Unit, remaining uint32,
	reset int64) *pb.RateLimitResponse_DescriptorStatus {
	return &pb.RateLimitResponse_DescriptorStatus{
		Code:               code,
		CurrentLimit:       &pb.RateLimitResponse_RateLimit{RequestsPerUnit: rpu, Unit: unit},
		LimitRemaining:     remaining,
		DurationUntilReset: &durationpb.Duration{Seconds: reset},
	}
}

// named is st with the limit's name.
func named(s *pb.RateLimitResponse_DescriptorStatus, name string) *pb.RateLimitResponse_DescriptorStatus {
	s.CurrentLimit.Name = name
	return s
}

// none is the status of a descriptor without a limit.
func none() *pb.RateLimitResponse_DescriptorStatus {
	return &pb.RateLimitResponse_DescriptorStatus{Code: ok}
}

// resp is a response of overall code with statuses.
func resp(code pb.RateLimitResponse_Code, sts ...*pb.RateLimitResponse_DescriptorStatus) *pb.RateLimitResponse {
	return &pb.RateLimitResponse{OverallCode: code, Statuses: sts}
}

// text is m in protojson, for readable comparisons.
func text(m proto.Message) string {
	b, err := protojson.MarshalOptions{Multiline: true}.Marshal(m)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}

// caller is one way to call a service: directly, or through a gRPC client.
type caller func(ctx context.Context, req *pb.RateLimitRequest) (*pb.RateLimitResponse, error)
