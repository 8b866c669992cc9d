package rls

import (
	"context"
	"fmt"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The conformance scenarios: call sequences of the reference service's integration tests,
// and of what this service adds, written as our own tables. Each runs on a fresh service
// whose clock starts at t0 (10.5 s into a minute: a minute's window has 50 s to go), on
// every backend and through every caller (service_test.go, grpc_test.go, redis_test.go).

const (
	apiConfig      = "testdata/conformance/api.yaml"
	reloadedConfig = "testdata/conformance/reloaded.yaml"
)

type step struct {
	advance time.Duration // moves the clock before the call
	reload  string        // a configuration the service takes before the call
	req     *pb.RateLimitRequest
	want    *pb.RateLimitResponse
	code    codes.Code // the error's code, when the call fails
}

type scenario struct {
	name   string
	config string
	opts   []Option
	// moves the clock past a window, which only the in-memory backend (whose clock the
	// test holds) follows; Redis counts on its own clock.
	localOnly bool
	steps     []step
}

func scenarios() []scenario {
	return []scenario{
		{name: "an unknown domain answers OK with no limit", config: apiConfig, steps: []step{
			{req: rq("nowhere", 0, desc("user", "alice")), want: resp(ok, none())},
			{req: rq("nowhere", 0, desc("block", "x"), desc("user", "a")), want: resp(ok, none(), none())},
		}},
		{name: "20 a minute: remaining 19 to 0, then OVER_LIMIT", config: apiConfig, steps: twentyPerMinute()},
		{name: "the window ends: a new window is full", config: apiConfig, localOnly: true, steps: []step{
			{req: rq("api", 20, desc("user", "dana")), want: resp(ok, st(ok, 20, minute, 0, 50))},
			{req: rq("api", 0, desc("user", "dana")), want: resp(over, st(over, 20, minute, 0, 50))},
			// 49.5 s later the clock is at 60.0 s: the next window, 60 s to go.
			{advance: 49500 * time.Millisecond, req: rq("api", 0, desc("user", "dana")),
				want: resp(ok, st(ok, 20, minute, 19, 60))},
		}},
		{name: "duration_until_reset decreases", config: apiConfig, localOnly: true, steps: []step{
			{req: rq("api", 0, desc("org", "x")), want: resp(ok, st(ok, 10, hour, 9, 3590))},
			{advance: 2 * time.Second, req: rq("api", 0, desc("org", "x")), want: resp(ok, st(ok, 10, hour, 8, 3588))},
			{advance: 1500 * time.Millisecond, req: rq("api", 0, desc("org", "x")), want: resp(ok, st(ok, 10, hour, 7, 3586))},
		}},
		{name: "all or nothing: the first keeps its remaining when the second runs out", config: apiConfig,
			steps: twoDescriptors()},
		{name: "requests_per_unit 0 blocks; hits_addend 0 only reads", config: apiConfig, steps: []step{
			{req: rq("api", 0, desc("block", "x")), want: resp(over, st(over, 0, second, 0, 1))},
			{req: rq("api", 0, hits(desc("block", "x"), 0)), want: resp(ok, st(ok, 0, second, 0, 1))},
			// A blocked descriptor denies the request: the other is not charged.
			{req: rq("api", 0, desc("user", "erin"), desc("block", "x")),
				want: resp(over, st(ok, 20, minute, 20, 50), st(over, 0, second, 0, 1))},
		}},
		{name: "unlimited", config: apiConfig, steps: []step{
			{req: rq("api", 0, desc("free", "x")), want: resp(ok, &pb.RateLimitResponse_DescriptorStatus{Code: ok, LimitRemaining: 1<<32 - 1})},
		}},
		{name: "hits_addend: the request's, a descriptor's, and more than is left", config: apiConfig, steps: []step{
			{req: rq("api", 5, desc("user", "fay")), want: resp(ok, st(ok, 20, minute, 15, 50))},
			{req: rq("api", 5, hits(desc("user", "fay"), 0)), want: resp(ok, st(ok, 20, minute, 15, 50))},
			{req: rq("api", 0, hits(desc("user", "fay"), 2)), want: resp(ok, st(ok, 20, minute, 13, 50))},
			// 14 > 13: denied, and, unlike the reference, a denial takes nothing.
			{req: rq("api", 14, desc("user", "fay")), want: resp(over, st(over, 20, minute, 0, 50))},
			{req: rq("api", 13, desc("user", "fay")), want: resp(ok, st(ok, 20, minute, 0, 50))},
			// More than the limit holds at all: denied without asking the limiter.
			{req: rq("api", 21, desc("user", "gus")), want: resp(over, st(over, 20, minute, 0, 50))},
			{req: rq("api", 0, desc("user", "gus")), want: resp(ok, st(ok, 20, minute, 19, 50))},
		}},
		{name: "is_negative_hits gives back", config: apiConfig, steps: []step{
			{req: rq("api", 6, desc("user", "hal")), want: resp(ok, st(ok, 20, minute, 14, 50))},
			{req: rq("api", 0, negative(desc("user", "hal"), 4)), want: resp(ok, st(ok, 20, minute, 18, 50))},
			// Never beyond a full bucket.
			{req: rq("api", 0, negative(desc("user", "hal"), 9)), want: resp(ok, st(ok, 20, minute, 20, 50))},
		}},
		{name: "shadow mode: an OVER_LIMIT reported as OK, the enforced limits still charged", config: apiConfig,
			steps: []step{
				{req: rq("api", 0, desc("trial", "x"), desc("user", "ivy")),
					want: resp(ok, st(ok, 2, minute, 1, 50), st(ok, 20, minute, 19, 50))},
				{req: rq("api", 0, desc("trial", "x"), desc("user", "ivy")),
					want: resp(ok, st(ok, 2, minute, 0, 50), st(ok, 20, minute, 18, 50))},
				{req: rq("api", 0, desc("trial", "x"), desc("user", "ivy")),
					want: resp(ok, st(ok, 2, minute, 0, 50), st(ok, 20, minute, 17, 50))},
				// An enforced denial: the request does not happen, the shadow bucket is not
				// charged.
				{req: rq("api", 0, desc("trial", "y"), desc("block", "x")),
					want: resp(over, st(ok, 2, minute, 2, 50), st(over, 0, second, 0, 1))},
			}},
		{name: "replaces: a limit named by another matched one is dropped", config: apiConfig, steps: []step{
			{req: rq("api", 0, desc("account", "k")), want: resp(ok, named(st(ok, 3, minute, 2, 50), "base"))},
			{req: rq("api", 0, desc("plan", "pro"), desc("account", "k")),
				want: resp(ok, named(st(ok, 50, minute, 49, 50), "pro"), none())},
			{req: rq("api", 0, desc("account", "k")), want: resp(ok, named(st(ok, 3, minute, 1, 50), "base"))},
		}},
		{name: "share_threshold: the values of a pattern share one bucket", config: apiConfig, steps: []step{
			{req: rq("api", 0, desc("file", "shared/a")), want: resp(ok, st(ok, 2, hour, 1, 3590))},
			{req: rq("api", 0, desc("file", "shared/b")), want: resp(ok, st(ok, 2, hour, 0, 3590))},
			{req: rq("api", 0, desc("file", "shared/c")), want: resp(over, st(over, 2, hour, 0, 3590))},
			// Without it, each value is a bucket of its own.
			{req: rq("api", 0, desc("file", "own/a")), want: resp(ok, st(ok, 2, hour, 1, 3590))},
			{req: rq("api", 0, desc("file", "own/b")), want: resp(ok, st(ok, 2, hour, 1, 3590))},
		}},
		{name: "a descriptor's own limit", config: apiConfig, steps: []step{
			{req: rq("api", 0, override(desc("user", "jan"), 3, typev3.RateLimitUnit_HOUR, 0)),
				want: resp(ok, st(ok, 3, hour, 2, 3590))},
			// A unit_multiplier of 10 minutes: the window began at 00:00:00, 590 s to go.
			{req: rq("api", 0, override(desc("user", "kim"), 4, typev3.RateLimitUnit_MINUTE, 10)),
				want: resp(ok, multiplied(st(ok, 4, minute, 3, 590), 10))},
			// Not on an unknown domain, as in the reference.
			{req: rq("nowhere", 0, override(desc("user", "jan"), 3, typev3.RateLimitUnit_HOUR, 0)),
				want: resp(ok, none())},
		}},
		{name: "a descriptor's own limit, ignored", config: apiConfig, opts: []Option{WithoutDescriptorLimits()},
			steps: []step{
				{req: rq("api", 0, override(desc("user", "lee"), 3, typev3.RateLimitUnit_HOUR, 0)),
					want: resp(ok, st(ok, 20, minute, 19, 50))},
			}},
		{name: "a reload replaces a blocked key and keeps usage", config: apiConfig, steps: []step{
			{req: rq("api", 0, desc("block", "x")), want: resp(over, st(over, 0, second, 0, 1))},
			{req: rq("api", 3, desc("user", "max")), want: resp(ok, st(ok, 20, minute, 17, 50))},
			{reload: reloadedConfig, req: rq("api", 0, desc("block", "x")), want: resp(ok, st(ok, 5, minute, 4, 50))},
			{req: rq("api", 0, desc("user", "max")), want: resp(ok, st(ok, 20, minute, 16, 50))},
			{req: rq("api", 0, desc("org", "x")), want: resp(ok, none())},
		}},
		{name: "bad requests", config: apiConfig, steps: []step{
			{req: rq("", 0, desc("user", "x")), code: codes.InvalidArgument},
			{req: rq("api", 0), code: codes.InvalidArgument},
			{req: rq("api", 0, override(desc("user", "x"), 3, typev3.RateLimitUnit_UNKNOWN, 0)), code: codes.InvalidArgument},
			{req: rq("api", 0, &rlv3.RateLimitDescriptor{}), want: resp(ok, none())},
			{req: rq("api", 0, make([]*rlv3.RateLimitDescriptor, MaxDescriptors+1)...), code: codes.InvalidArgument},
		}},
	}
}

func twentyPerMinute() []step {
	var steps []step
	for i := range 20 {
		steps = append(steps, step{req: rq("api", 0, desc("user", "alice")),
			want: resp(ok, st(ok, 20, minute, uint32(19-i), 50))})
	}
	for range 3 {
		steps = append(steps, step{req: rq("api", 0, desc("user", "alice")),
			want: resp(over, st(over, 20, minute, 0, 50))})
	}
	return steps
}

func twoDescriptors() []step {
	var steps []step
	both := func() *pb.RateLimitRequest { return rq("api", 0, desc("user", "bob"), desc("org", "acme")) }
	for i := range 10 {
		steps = append(steps, step{req: both(),
			want: resp(ok, st(ok, 20, minute, uint32(19-i), 50), st(ok, 10, hour, uint32(9-i), 3590))})
	}
	for range 5 {
		steps = append(steps, step{req: both(),
			want: resp(over, st(ok, 20, minute, 10, 50), st(over, 10, hour, 0, 3590))})
	}
	// The first alone still has its 10.
	steps = append(steps, step{req: rq("api", 0, desc("user", "bob")), want: resp(ok, st(ok, 20, minute, 9, 50))})
	return steps
}

// override gives a descriptor its own limit.
func override(d *rlv3.RateLimitDescriptor, rpu uint32, unit typev3.RateLimitUnit, mult uint32) *rlv3.RateLimitDescriptor {
	d.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: rpu, Unit: unit}
	if mult > 0 {
		d.Limit.UnitMultiplier = wrapperspb.UInt32(mult)
	}
	return d
}

func multiplied(s *pb.RateLimitResponse_DescriptorStatus, m uint32) *pb.RateLimitResponse_DescriptorStatus {
	s.CurrentLimit.UnitMultiplier = wrapperspb.UInt32(m)
	return s
}

// run plays sc's steps through call on a service s whose clock is clock, and returns what
// differed from the tables.
func (sc scenario) run(ctx context.Context, s *Service, clock *testClock, call caller) []string {
	var diffs []string
	for i, stp := range sc.steps {
		clock.Advance(stp.advance)
		if stp.reload != "" {
			c, err := Load(stp.reload)
			if err == nil {
				err = s.SetConfig(c)
			}
			if err != nil {
				return append(diffs, fmt.Sprintf("step %d: reload: %v", i, err))
			}
		}
		got, err := call(ctx, stp.req)
		if stp.code != codes.OK {
			if status.Code(err) != stp.code {
				diffs = append(diffs, fmt.Sprintf("step %d: error %v, want code %v", i, err, stp.code))
			}
			continue
		}
		if err != nil {
			diffs = append(diffs, fmt.Sprintf("step %d: %v", i, err))
			continue
		}
		if w, g := text(stp.want), text(got); w != g {
			diffs = append(diffs, fmt.Sprintf("step %d:\nwant %s\n got %s", i, w, g))
		}
	}
	return diffs
}
