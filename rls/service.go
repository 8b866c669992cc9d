package rls

import (
	"context"
	"fmt"
	"sync/atomic"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/observe"
)

// Service answers ShouldRateLimit, Envoy's rate-limit service call, from a Config, on a
// limiter of the kit. It is safe for concurrent use; SetConfig swaps the configuration
// while calls go on.
type Service struct {
	pb.UnimplementedRateLimitServiceServer
	limiter   ratelimit.MultiLimiter
	inspector ratelimit.Inspector      // nil when the limiter has none
	validator ratelimit.LimitValidator // nil when the limiter has none
	backend   string
	config    atomic.Pointer[Config]
	opts      options
}

var _ pb.RateLimitServiceServer = (*Service)(nil)

// New returns a Service that decides with limiter under config (nil: no domain). It returns
// an error, wrapping ErrConfig, when the limiter refuses one of config's limits (its
// ratelimit.LimitValidator: a sliding log with a Burst above 10,000, say). It panics on a
// nil limiter, on one that decides no several limits at once (ratelimit.MultiLimiter,
// found with ratelimit.As) and on conflicting options. Refunds (is_negative_hits) and
// descriptors of hits_addend 0 need a limiter that is a ratelimit.Inspector, as every
// limiter of the kit is: without one, they answer OK and change nothing.
func New(limiter ratelimit.Limiter, config *Config, opts ...Option) (*Service, error) {
	if limiter == nil {
		panic("rls: New: nil limiter")
	}
	multi, ok := ratelimit.As[ratelimit.MultiLimiter](limiter)
	if !ok {
		panic(fmt.Sprintf("rls: New: %T does not decide several limits at once (ratelimit.MultiLimiter)", limiter))
	}
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.setStyle && o.setOff {
		panic("rls: New: WithHeaderStyle and WithoutHeaders conflict")
	}
	s := &Service{limiter: multi, opts: o, backend: observe.BackendName(limiter)}
	s.inspector, _ = ratelimit.As[ratelimit.Inspector](limiter)
	s.validator, _ = ratelimit.As[ratelimit.LimitValidator](limiter)
	if err := s.SetConfig(config); err != nil {
		return nil, err
	}
	return s, nil
}

// SetConfig makes config (nil: no domain) the configuration of the calls that start from
// now on. A bucket whose descriptor keeps its limit, or changes only its numbers on a
// fixed window of the same unit, keeps its usage (see Rule.Limit). It returns an error,
// wrapping ErrConfig, and keeps the configuration it had, when the limiter refuses one of
// config's limits.
func (s *Service) SetConfig(config *Config) error {
	if config == nil {
		config = &Config{}
	}
	if v := s.validator; v != nil {
		for _, r := range config.rules {
			if r.Limit == (ratelimit.Limit{}) {
				continue
			}
			if err := v.ValidateLimit(r.Limit); err != nil {
				return fmt.Errorf("%w: descriptor %s: %w", ErrAlgorithm, r.Path, err)
			}
		}
	}
	s.config.Store(config)
	return nil
}

// Config returns the configuration in use.
func (s *Service) Config() *Config { return s.config.Load() }

// ShouldRateLimit decides a request of Envoy's rate-limit service. An unknown domain
// answers OK with no limit. Every descriptor of a request is decided by one
// ratelimit.MultiLimiter.AllowAll, all or nothing: when one descriptor is over its limit,
// the request is charged to none, and the others report the remaining they had (see
// https://github.com/sluice-go/ratelimit/blob/main/docs/rls.md for the rules of shadow
// mode, replaces, refunds and hits_addend). An empty domain, no descriptors or more than
// MaxDescriptors is an InvalidArgument error.
func (s *Service) ShouldRateLimit(ctx context.Context, req *pb.RateLimitRequest) (*pb.RateLimitResponse, error) {
	if req.GetDomain() == "" {
		return nil, status.Error(codes.InvalidArgument, "rate limit domain must not be empty")
	}
	if len(req.GetDescriptors()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "rate limit descriptor list must not be empty")
	}
	if len(req.GetDescriptors()) > MaxDescriptors {
		return nil, status.Errorf(codes.InvalidArgument, "more than %d descriptors", MaxDescriptors)
	}
	resp := &pb.RateLimitResponse{
		OverallCode: pb.RateLimitResponse_OK,
		Statuses:    make([]*pb.RateLimitResponse_DescriptorStatus, len(req.GetDescriptors())),
	}
	top, known := s.config.Load().domain(req.GetDomain())
	if !known {
		for i := range resp.Statuses {
			resp.Statuses[i] = &pb.RateLimitResponse_DescriptorStatus{Code: pb.RateLimitResponse_OK}
		}
		return resp, nil
	}
	plan, err := s.plan(top, req)
	if err != nil {
		return nil, err
	}
	if err := s.decide(ctx, plan); err != nil {
		return nil, err
	}
	now := s.opts.clock()
	for i, d := range plan.items {
		resp.Statuses[i] = d.status(now)
		if d.over && !d.shadow {
			resp.OverallCode = pb.RateLimitResponse_OVER_LIMIT
		}
	}
	resp.ResponseHeadersToAdd = s.responseHeaders(plan, now)
	return resp, nil
}

// MaxDescriptors is the most descriptors a request may carry: Envoy sends one per rate
// limit action of a route, a handful.
const MaxDescriptors = 256

// kind is what the service does with one descriptor.
type kind int

const (
	noLimit   kind = iota // no limit applies: OK
	unlimited             // an unlimited limit: OK, remaining MaxUint32
	blocked               // requests_per_unit 0: OVER_LIMIT unless hits_addend is 0
	charge                // decided by AllowAll
	peek                  // hits_addend 0: read, not charged
	refund                // is_negative_hits: given back
)

// item is one descriptor of a request on its way to its status.
type item struct {
	kind   kind
	rule   *Rule
	limit  ratelimit.Limit
	window int64 // a fixed window's length in seconds; 0 for the other algorithms
	key    string
	hits   uint64
	shadow bool
	// The outcome.
	over      bool
	decided   bool // the limiter answered; false when it failed
	remaining int
	res       ratelimit.Result
}

// plan is the items of one request.
type plan struct {
	items []item
}

// plan resolves each descriptor of req to its limit, bucket and hits.
func (s *Service) plan(top *node, req *pb.RateLimitRequest) (*plan, error) {
	p := &plan{items: make([]item, len(req.GetDescriptors()))}
	var replaced map[string]bool // allocated by the first replaces
	for i, d := range req.GetDescriptors() {
		it := &p.items[i]
		m, err := s.resolve(top, req.GetDomain(), d)
		if err != nil {
			return nil, err
		}
		if m.rule == nil {
			continue
		}
		it.rule = m.rule
		for _, r := range m.rule.Replaces {
			if replaced == nil {
				replaced = make(map[string]bool)
			}
			replaced[r] = true
		}
		if m.rule.Unlimited {
			it.kind = unlimited
			continue
		}
		it.limit, it.shadow = m.rule.Limit, m.rule.Shadow
		if m.rule.Algorithm == ratelimit.FixedWindow {
			it.window = m.seconds
		}
		it.key = bucketKey(req.GetDomain(), d.GetEntries(), m.shared, !s.opts.noHashTag)
		it.hits = uint64(max(req.GetHitsAddend(), 1))
		if h := d.GetHitsAddend(); h != nil {
			it.hits = h.GetValue()
		}
		switch {
		case it.hits > 0 && d.GetIsNegativeHits():
			it.kind = refund
		case it.hits == 0:
			it.kind = peek
		case it.limit == (ratelimit.Limit{}):
			it.kind = blocked
		default:
			it.kind = charge
		}
	}
	for i := range p.items {
		it := &p.items[i]
		if it.rule != nil && it.rule.Name != "" && replaced[it.rule.Name] {
			*it = item{}
		}
	}
	return p, nil
}

// resolved is a descriptor's rule, with its window in seconds and shared patterns.
type resolved struct {
	match
	seconds int64
}

// resolve finds the rule of descriptor d: its own limit when it carries one and overrides
// are on, else the configuration's.
func (s *Service) resolve(top *node, domain string, d *rlv3.RateLimitDescriptor) (resolved, error) {
	if o := d.GetLimit(); o != nil && !s.opts.noOverrides {
		unit := pb.RateLimitResponse_RateLimit_Unit(o.GetUnit())
		seconds := unitSeconds(unit)
		if seconds == 0 {
			return resolved{}, status.Errorf(codes.InvalidArgument, "a descriptor's limit has unit %v", o.GetUnit())
		}
		mult := int64(1)
		if m := o.GetUnitMultiplier(); m != nil && m.GetValue() > 1 {
			mult = int64(m.GetValue())
		}
		if seconds*mult > 1<<53/1_000_000 {
			return resolved{}, status.Error(codes.InvalidArgument, "a descriptor's limit has a unit_multiplier too large")
		}
		r := &Rule{
			Path: domain + ".override", Unit: unit, RequestsPerUnit: o.GetRequestsPerUnit(),
			Algorithm: ratelimit.FixedWindow,
			Limit:     limitOf(o.GetRequestsPerUnit(), seconds*mult, ratelimit.FixedWindow),
		}
		if mult > 1 {
			r.multiplier = uint32(mult)
		}
		return resolved{match: match{rule: r}, seconds: seconds * mult}, nil
	}
	m := lookup(top, d.GetEntries())
	if m.rule == nil {
		return resolved{}, nil
	}
	return resolved{match: m, seconds: unitSeconds(m.rule.Unit)}, nil
}
