package distributed

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
)

var _ ratelimit.Settler = (*Limiter)(nil)

//go:embed settle.lua
var settleFile string

// settleScript is settle.lua with the decide functions of the algorithms that keep a debt.
var settleScript = newScriptPair(assemble(expand(settleFile), []multiAlgorithm{
	{algorithms[ratelimit.TokenBucket].tag, gcraSource, refundGCRASource, false},
	{algorithms[ratelimit.LeakyBucket].tag, leakyBucketSource, refundGCRASource, false},
}))

// keepSettleScript is settleScript for the buckets with KeepUsage, whose value is "tat
// rate": the deficit read at the rate it was written at carries to the call's, as
// keepRefundRead carries it (none is a full bucket), and the write keeps the call's rate.
var keepSettleScript = newScriptPair(assemble(keepVariant(expand(settleFile),
	"  local v = tonumber(stored)\n", "  local v\n"+fragments["keptat"],
	"redis.call('SET', KEYS[1], string.format('%.17g', debited), 'PX', ttl)", "redis.call('SET', KEYS[1], "+keepWrite("debited")+", 'PX', ttl)"),
	[]multiAlgorithm{
		{keepAlgorithms[ratelimit.TokenBucket].tag, keepGCRASource, keepRefundGCRASource, false},
		{keepAlgorithms[ratelimit.LeakyBucket].tag, keepLeakyBucketSource, keepRefundGCRASource, false},
	}))

// Settle settles the decision whose Result.Charge is c, which reserved tokens, to actual
// tokens, as ratelimit.Settler says, in one script: an underrun is Refund's, with c; an
// overrun is charged at once (settle.lua), into debt if need be, and a bucket is never more
// than Burst tokens in debt, with the local backend's arithmetic. What debt is, per
// algorithm:
//
//   - The token bucket's TAT runs ahead of now by more than Burst: at most 2·Burst tokens.
//   - The leaky bucket's queue holds more than Burst: at most 2·Burst places.
//
// With KeepUsage the same, at the Rate of the call, to which the deficit carries as a refund
// carries it. The other algorithms, and a token bucket with a Warmup, refuse an overrun with
// an error wrapping ratelimit.ErrNotSupported (an underrun is a refund, which they all have). A
// hold's Charge (Hold) settles the hold. A settle is never refused for the priority ctx carries;
// its Result is Peek's for one token at that priority.
func (l *Limiter) Settle(ctx context.Context, key string, limit ratelimit.Limit, c ratelimit.Charge, reserved, actual int) (ratelimit.Result, error) {
	if reserved < 0 || actual < 0 {
		return ratelimit.Result{Limit: limit}, fmt.Errorf("%w: distributed: Settle: reserved = %d, actual = %d", args.ErrInvalidCost, reserved, actual)
	}
	if strings.HasPrefix(c.Part, holdPart) {
		return l.settleHold(ctx, "settle", key, limit, c, reserved, actual)
	}
	switch {
	case actual < reserved:
		return l.Refund(ctx, key, limit, reserved-actual, c)
	case actual == reserved:
		return l.Peek(ctx, key, limit, 1)
	}
	if err := l.check(key, limit, 1); err != nil {
		return ratelimit.Result{Limit: limit}, err
	}
	named := args.Resolve(limit, l.algorithm)
	if !(named.Algorithm == ratelimit.TokenBucket || named.Algorithm == ratelimit.LeakyBucket) || limit.Warmup != 0 {
		return ratelimit.Result{Limit: limit}, fmt.Errorf("%w: distributed: Settle: an overrun on %v (a token or leaky bucket without a warm-up keeps a debt)",
			ratelimit.ErrNotSupported, named.Algorithm)
	}
	d := actual - reserved
	if d > 2*limit.Burst {
		return ratelimit.Result{Limit: limit}, fmt.Errorf("%w: distributed: Settle: an overrun of %d tokens is more than 2·Burst", ratelimit.ErrExceedsBurst, d)
	}
	reserve, err := l.reserve(ctx, limit, 1)
	if err != nil {
		return ratelimit.Result{Limit: limit}, err
	}
	alg := l.algorithmFor(limit)
	argv := []any{alg.tag, limit.Rate, limit.Burst, d, "", reserve}
	if l.now != nil {
		argv = append(argv, l.clientNow(), l.skew)
	}
	script := settleScript
	if limit.KeepUsage {
		script = keepSettleScript
	}
	vals, err := l.run(ctx, script.on(l.now != nil), []string{l.key(key, alg.tag, limit)}, argv, nil)
	if err != nil {
		return ratelimit.Result{Limit: limit}, invalidState(err)
	}
	if len(vals) != 7 {
		return ratelimit.Result{Limit: limit}, fmt.Errorf("distributed: the settle script returned %d values, want 7", len(vals))
	}
	res := resultOf(vals[2:], limit)
	if vals[0] != 1 {
		return res, errDebt
	}
	return res, nil
}

// errDebt refuses an overrun that would put a bucket more than Burst tokens in debt.
var errDebt = fmt.Errorf("%w: distributed: Settle: the overrun would put the bucket more than Burst tokens in debt", ratelimit.ErrExceedsBurst)
