package rls

import (
	"context"
	"math"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/observe"
)

// decide settles every item of p: refunds first, then the enforced descriptors in one
// AllowAll, then, if they were allowed, the shadow ones in another, then the reads.
//
// Shadow descriptors are a group of their own so that a shadow limit never blocks the
// enforced ones: a request denied by a shadow limit alone is still charged to the enforced
// limits, as it goes through. A request denied by an enforced limit does not happen, so
// its shadow limits are not charged either: a shadow bucket counts what it would count if
// it were enforced. Within each group, all or nothing.
func (s *Service) decide(ctx context.Context, p *plan) error {
	for i := range p.items {
		if it := &p.items[i]; it.kind == refund {
			s.refund(ctx, it)
		}
	}
	enforced, err := s.group(ctx, p, false)
	if err != nil {
		return err
	}
	if enforced {
		if _, err := s.group(ctx, p, true); err != nil {
			return err
		}
	}
	for i := range p.items {
		it := &p.items[i]
		if it.kind == peek || (it.kind == charge && !it.decided && it.shadow && !enforced) {
			s.read(ctx, it)
		}
	}
	return nil
}

// group decides the charged and blocked items whose shadow mode is shadow, all or nothing,
// and reports whether they were allowed. Items of one bucket are one request of their
// summed hits.
func (s *Service) group(ctx context.Context, p *plan, shadow bool) (bool, error) {
	var (
		reqs  []ratelimit.Request
		of    []int // of[i]: the request of item i, or -1
		fixed bool  // a blocked item, or hits above the burst: denied without asking
	)
	of = make([]int, len(p.items))
	for i := range p.items {
		of[i] = -1
		it := &p.items[i]
		if it.shadow != shadow || (it.kind != charge && it.kind != blocked) {
			continue
		}
		if it.kind == blocked {
			it.over, it.decided, fixed = true, true, true
			continue
		}
		j := -1
		for k := range reqs {
			if reqs[k].Key == it.key {
				j = k
				break
			}
		}
		if j < 0 {
			reqs = append(reqs, ratelimit.Request{Key: it.key, Limit: it.limit, Name: it.rule.Path})
			j = len(reqs) - 1
		}
		n := uint64(reqs[j].N) + it.hits
		reqs[j].N = int(min(n, math.MaxInt32))
		of[i] = j
	}
	for j := range reqs {
		if reqs[j].N > reqs[j].Limit.Burst {
			fixed = true
			for i, k := range of {
				if k == j {
					p.items[i].over, p.items[i].decided = true, true
				}
			}
		}
	}
	if len(reqs) == 0 && !fixed {
		return true, nil
	}
	if fixed {
		// Denied before any bucket is asked: the others are read, not charged.
		for i, k := range of {
			if it := &p.items[i]; k >= 0 && !it.decided {
				s.read(ctx, it)
			}
		}
		return false, nil
	}
	watch := observe.NewStopwatch(s.opts.observer)
	start := watch.Start()
	mr, err := s.limiter.AllowAll(ctx, reqs)
	if o := s.opts.observer; o != nil {
		call := observe.Call{Backend: s.backend, Shadow: shadow, Duration: watch.Stop(start)}
		observe.ReportAll(ctx, o, call, reqs, mr, err)
	}
	if err != nil {
		return false, s.failed(ctx, p, of, err)
	}
	for i, j := range of {
		if j < 0 {
			continue
		}
		it := &p.items[i]
		it.decided, it.res = true, mr.Results[j]
		switch {
		case mr.Allowed:
			it.remaining = it.res.Remaining
		case it.res.Allowed:
			// Allowed alone, not charged: what it had before this request.
			it.remaining = min(it.res.Remaining+reqs[j].N, it.limit.Burst)
		default:
			it.over = true
		}
	}
	return mr.Allowed, nil
}

// failed settles the items of a group whose AllowAll returned err, by the failure mode;
// it returns the error the call answers, if any.
func (s *Service) failed(ctx context.Context, p *plan, of []int, err error) error {
	if ctx.Err() != nil {
		return status.FromContextError(ctx.Err()).Err()
	}
	if observe.Classify(ctx, err) == observe.KindInvalidInput {
		return status.Errorf(codes.InvalidArgument, "%v", err)
	}
	if s.opts.failure == FailError {
		return status.Errorf(codes.Unavailable, "rls: the limiter could not decide: %v", err)
	}
	for i, j := range of {
		if j >= 0 {
			p.items[i].decided = true
			p.items[i].over = s.opts.failure == FailClosed
		}
	}
	return nil
}

// refund gives an item's hits back to its bucket.
func (s *Service) refund(ctx context.Context, it *item) {
	it.decided = true
	if s.inspector == nil || it.limit == (ratelimit.Limit{}) {
		return
	}
	res, err := s.inspector.Refund(ctx, it.key, it.limit, int(min(it.hits, math.MaxInt32)), ratelimit.Charge{})
	if err == nil {
		it.res, it.remaining = res, current(res, it.limit)
	}
}

// current is the tokens a bucket holds, from the Result of a Peek (or Refund) of one
// token, which says what taking it would leave.
func current(res ratelimit.Result, limit ratelimit.Limit) int {
	if res.Allowed {
		return min(res.Remaining+1, limit.Burst)
	}
	return res.Remaining
}

// read sets what an item's bucket holds, without charging it.
func (s *Service) read(ctx context.Context, it *item) {
	it.decided = true
	if s.inspector == nil || it.limit == (ratelimit.Limit{}) {
		return
	}
	res, err := s.inspector.Peek(ctx, it.key, it.limit, 1)
	if err != nil {
		return
	}
	it.res, it.remaining = res, current(res, it.limit)
}

// status returns the item's DescriptorStatus; a shadow item over its limit is OK.
func (it *item) status(now time.Time) *pb.RateLimitResponse_DescriptorStatus {
	st := &pb.RateLimitResponse_DescriptorStatus{Code: pb.RateLimitResponse_OK}
	switch it.kind {
	case noLimit:
		return st
	case unlimited:
		st.LimitRemaining = math.MaxUint32
		return st
	}
	if it.over && !it.shadow {
		st.Code = pb.RateLimitResponse_OVER_LIMIT
	}
	if !it.over {
		st.LimitRemaining = uint32(min(max(it.remaining, 0), math.MaxUint32))
	}
	st.CurrentLimit = &pb.RateLimitResponse_RateLimit{
		Name: it.rule.Name, RequestsPerUnit: it.rule.RequestsPerUnit, Unit: it.rule.Unit,
	}
	if it.rule.multiplier > 1 {
		st.CurrentLimit.UnitMultiplier = wrapperspb.UInt32(it.rule.multiplier)
	}
	st.DurationUntilReset = durationpb.New(it.reset(now))
	return st
}

// reset is the item's duration_until_reset: for a fixed window, as the reference service
// computes it, the window less the whole seconds since it began (1 to the window's
// length); for the other algorithms, the time until the bucket is full again, rounded up
// to whole seconds.
func (it *item) reset(now time.Time) time.Duration {
	if it.window > 0 {
		return time.Duration(it.window-now.Unix()%it.window) * time.Second
	}
	return ceilSecond(it.res.ResetAfter)
}

func ceilSecond(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return (d + time.Second - 1) / time.Second * time.Second
}
