package pipeline

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/internal/bucket"
	"github.com/sluice-go/ratelimit/priority"
	"github.com/sluice-go/ratelimit/rules"
)

// prepare yields r's requests of the limiter, in d, whatever gives r its limits: its policy
// under the rules in force (WithRules), the entries of WithLimits, or the one limit of the
// other options. One limit is in d.Limit and d.bucket, several in d.Reqs, each with its
// bucket key (bucket.Name), its cost and its policy's name. It returns the request's context
// with r's priority, and r's policy under the rules (nil otherwise); ok is false when the
// limiter has nothing to decide: r is not limited, or the error handler ended it.
func (p *Pipeline[R]) prepare(ctx context.Context, r R, d *Decision) (pctx context.Context, pol *rules.Policy, ok bool) {
	switch {
	case p.opts.Rules != nil:
		if pol, ok = p.fromPolicy(r, d); ok {
			// The policy's priority wins over WithPriorityFunc's, which is not asked then.
			if pol.HasPriority {
				return priority.With(ctx, pol.Priority), pol, true
			}
			return p.withPriority(ctx, r), pol, true
		}
		return ctx, pol, false
	case p.limiter == nil: // only the permits of WithConcurrency
		return ctx, nil, false
	case p.opts.Limits != nil:
		d.Shadow = p.opts.Shadow
		ok = p.fromLimits(r, d, slices.Clone(p.opts.Limits(r)))
	default:
		d.Shadow = p.opts.Shadow
		if ok = p.fromLimit(r, d); ok {
			d.Cost = 1
			if p.opts.Cost != nil {
				d.Cost = p.opts.Cost(r)
			}
		}
	}
	if !ok {
		return ctx, nil, false
	}
	return p.withPriority(ctx, r), nil, true
}

// fromPolicy finds r's policy under the rules in force, which gives its key, cost, shadow
// mode and limits; pol is nil when no policy applies.
func (p *Pipeline[R]) fromPolicy(r R, d *Decision) (pol *rules.Policy, ok bool) {
	set := p.opts.Rules.Set()
	if set == nil {
		return nil, false
	}
	req := p.opts.RulesRequest(r)
	if pol = set.Match(req); pol == nil {
		return nil, false
	}
	d.Policy, d.Cost, d.Shadow = pol.Name, max(pol.Cost, 1), p.opts.Shadow || pol.Shadow
	if !p.policyKey(r, req, pol, d) {
		return pol, false
	}
	switch len(pol.Limits) {
	case 0:
		return pol, false
	case 1:
		d.Limit = pol.Limits[0]
		if d.bucket == "" {
			d.bucket = bucket.Name{Policy: pol.Name, Shadow: d.Shadow}.Key(d.Key)
		}
		return pol, true
	}
	reqs := make([]ratelimit.Request, len(pol.Limits))
	for i, l := range pol.Limits {
		reqs[i] = ratelimit.Request{Key: d.Key, Limit: l, N: pol.Cost, Name: pol.Name}
	}
	return pol, p.fromLimits(r, d, reqs)
}

// policyKey sets d.Key to r's key under pol: the value of its key function, or the
// middleware's own key for a policy that names none (then with d.bucket, its bucket key,
// when one allocation builds both: see bucketOfParts). A key that cannot be found is
// UnkeyedKey, reported to the error handler; ok is false when the handler ended r.
func (p *Pipeline[R]) policyKey(r R, req rules.Request, pol *rules.Policy, d *Decision) (ok bool) {
	if pol.Key == "" {
		return p.bucketOfParts(r, d) || p.key(r, d)
	}
	key, err := pol.KeyOf(req)
	if err == nil {
		err = checkKey(bucket.Name{Policy: pol.Name, Shadow: d.Shadow}, key)
	}
	if err != nil {
		if herr := p.onError(r, fmt.Errorf("%sno key (%s), limiting as %q: %w", p.prefix, pol.Name, UnkeyedKey, err)); herr != nil {
			d.Verdict, d.Err = Handled, herr
			return false
		}
		key = UnkeyedKey
	}
	d.Key = key
	return true
}

// fromLimit finds r's one limit (WithLimit, WithLimitFunc, the tables), its policy and its
// key; ok is false for a request that is not limited: given ratelimit.Unlimited, or the zero
// Limit (which WithLimitFunc's function should not give: see reportZero).
func (p *Pipeline[R]) fromLimit(r R, d *Decision) (ok bool) {
	d.Limit, d.Policy = p.opts.Limit(r)
	if math.IsInf(d.Limit.Rate, 1) && d.Limit == ratelimit.Unlimited {
		d.Limit, d.Policy = ratelimit.Limit{}, ""
		return false
	}
	if d.Limit == (ratelimit.Limit{}) {
		if p.opts.zeroFromFunc && !p.zeroReported.Load() {
			p.reportZero(r, d)
		}
		return false
	}
	if d.Policy == "" {
		d.Policy = p.opts.PolicyName
	}
	if p.bucketOfParts(r, d) {
		return true
	}
	if !p.key(r, d) {
		return false
	}
	d.bucket = bucket.Name{Policy: d.Policy, Shadow: d.Shadow}.Key(d.Key)
	return true
}

// fromLimits settles reqs, r's several limits with their keys, in place, and sets d.Reqs to
// them. Each entry is settled as one limit is: a missing name is the policy's name
// (WithPolicyName), a key the limiter cannot take is UnkeyedKey (reported to the error handler
// once per request), and the key becomes the bucket key of the entry's limit (the first one's
// is d.bucket when policyKey built it). ok is false when no entry has a limit, or the error
// handler ended r.
func (p *Pipeline[R]) fromLimits(r R, d *Decision, reqs []ratelimit.Request) (ok bool) {
	limited, reported := false, false
	for i := range reqs {
		q := &reqs[i]
		if math.IsInf(q.Limit.Rate, 1) && q.Limit == ratelimit.Unlimited {
			q.Limit = ratelimit.Limit{} // an entry skipped, as the zero Limit is
		}
		if q.Limit == (ratelimit.Limit{}) {
			continue
		}
		limited = true
		if q.Name == "" {
			q.Name = p.opts.PolicyName
		}
		if err := checkName(q.Name); err != nil {
			p.refuse(r, d, fmt.Errorf("%w: limit %d: %w", args.ErrInvalidRequest, i, err))
			return false
		}
		name := bucket.Name{Policy: q.Name, Limit: indexOf(reqs[:i], q.Name), Keep: q.Limit.KeepUsage, Shadow: d.Shadow}
		err := checkKey(name, q.Key)
		if err != nil && !reported {
			reported = true
			if herr := p.onError(r, fmt.Errorf("%sno key for limit %d (%s), limiting as %q: %w",
				p.prefix, i, q.Name, UnkeyedKey, err)); herr != nil {
				d.Verdict, d.Err = Handled, herr
				return false
			}
		}
		if err != nil {
			q.Key = UnkeyedKey
		}
		if i > 0 || d.bucket == "" {
			q.Key = name.Key(q.Key)
		} else {
			q.Key = d.bucket // the first limit's, built with its key: see policyKey
		}
	}
	d.bucket = ""
	if limited {
		d.Reqs = reqs
	}
	return limited
}

// refuse refuses r for err, a mistake of the program, whatever the error policy; the error
// handler may end r.
func (p *Pipeline[R]) refuse(r R, d *Decision, err error) {
	d.Verdict, d.Err = Invalid, err
	if herr := p.onError(r, fmt.Errorf("%s%w", p.prefix, err)); herr != nil {
		d.Verdict, d.Err = Handled, herr
	}
}

// indexOf returns the index of a limit of the policy named policy after the limits before
// it, settled: the number of them that are that policy's.
func indexOf(before []ratelimit.Request, policy string) int {
	index := 0
	for _, e := range before {
		if e.Name == policy && e.Limit != (ratelimit.Limit{}) {
			index++
		}
	}
	return index
}

// reportZero tells the error handler, once in the pipeline's life, that WithLimitFunc's
// function returned the zero Limit for r: the request is not limited, as before, and the
// mistake is seen without a report per request. The error handler may end r.
func (p *Pipeline[R]) reportZero(r R, d *Decision) {
	if !p.zeroReported.CompareAndSwap(false, true) {
		return
	}
	if herr := p.onError(r, fmt.Errorf("%s%w", p.prefix, ErrZeroFromFunc)); herr != nil {
		d.Verdict, d.Err = Handled, herr
	}
}

// bucketOfParts sets d.Key and d.bucket from the parts of r's default key (KeyParts), with
// the one allocation of the bucket key: the key is the bucket key's tail. It returns false,
// leaving the key to key, when there are no parts for r, or when their key is one the
// limiter cannot take (key reports it).
func (p *Pipeline[R]) bucketOfParts(r R, d *Decision) bool {
	if p.opts.KeyParts == nil || p.opts.keyBy != "" {
		return false
	}
	prefix, value, ok := p.opts.KeyParts(r)
	n := len(prefix) + len(value)
	name := bucket.Name{Policy: d.Policy, Shadow: d.Shadow}
	if !ok || n == 0 || checkKeyLen(name, n) != nil {
		return false
	}
	d.bucket = name.KeyOfParts(prefix, value)
	d.Key = d.bucket[len(d.bucket)-n:]
	return true
}

// key sets d.Key to r's key under d.Policy, or UnkeyedKey when the key function fails or
// gives a key the limiter cannot take (reported to the error handler); ok is false when
// the error handler ended r.
func (p *Pipeline[R]) key(r R, d *Decision) (ok bool) {
	key, err := p.opts.Key(r)
	if err == nil {
		err = checkKey(bucket.Name{Policy: d.Policy, Shadow: d.Shadow}, key)
	}
	if err != nil {
		if herr := p.onError(r, fmt.Errorf("%sno key, limiting as %q: %w", p.prefix, UnkeyedKey, err)); herr != nil {
			d.Verdict, d.Err = Handled, herr
			return false
		}
		key = UnkeyedKey
	}
	d.Key = key
	return true
}

// withPriority returns ctx carrying r's priority, when the middleware gives requests one
// (WithPriorityFunc); ctx as it is otherwise, and when it carries that priority already
// (Critical, for a context that carries none), which costs no allocation.
func (p *Pipeline[R]) withPriority(ctx context.Context, r R) context.Context {
	if p.opts.Priority == nil {
		return ctx
	}
	return priority.With(ctx, p.opts.Priority(r))
}

// checkKey returns the error a limiter would return for the bucket key of key under name,
// or nil.
func checkKey(name bucket.Name, key string) error {
	if key == "" {
		return args.ErrKeyEmpty
	}
	return checkKeyLen(name, len(key))
}

// checkKeyLen returns the error a limiter would return for the bucket key of a key of n
// bytes under name for being too long, or nil.
func checkKeyLen(name bucket.Name, n int) error {
	n += name.HeadLen()
	if n > args.MaxKeyLen {
		return fmt.Errorf("%w: %d bytes with the policy's name", args.ErrKeyTooLong, n)
	}
	return nil
}

// checkName returns an error for a policy name a bucket key cannot carry: one with a '|'
// (see bucket.Separator).
func checkName(name string) error {
	if strings.IndexByte(name, bucket.Separator) >= 0 {
		return fmt.Errorf("policy name %q has a '|', which separates a bucket key's policy from its key", name)
	}
	return nil
}
