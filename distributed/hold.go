package distributed

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
)

//go:embed hold.lua
var holdFile string

var _ ratelimit.Settler = (*Limiter)(nil)

// holdScript is hold.lua with every algorithm's decide and refund functions, as multi.lua.
var holdScript = newScriptPair(assemble(expand(holdFile), multiAlgorithms))

// holdPart begins the Charge.Part of a hold: "hold:n:ttl", n the tokens held and ttl the
// hold's TTL in µs, so that Settle and Refund find its record.
const holdPart = "hold:"

// Hold decides n tokens as AllowN does and, if they are taken, records them as a
// reservation in flight that expires after ttl, in one script on the Redis clock: every
// later decision on the bucket counts them (usage + holds + requested ≤ Burst), so N
// callers holding an estimate at zero usage cannot all pass. Settle, or Refund, with the
// Result's Charge settles the hold to what the work cost and removes its record; a hold
// never settled (its holder crashed) is given back, as Refund with its Charge gives back,
// by the first Hold, Settle or Refund on the bucket at or after its expiry. Until then, and
// to a plain AllowN, an expired hold still counts: never more permissive than keeping it.
// A hold settled after its expiry was given back already: its whole actual cost is an
// overrun (refused by the algorithms that keep no debt, see Settle). Settle a hold once.
//
// Every algorithm holds. ttl must be at least 1 µs; its record lives in a key beside the
// bucket's, in its hash slot (the bucket's key with ":holds" appended, or braced first when
// the bucket's key has no hash tag), so a Cluster runs the script on one node.
func (l *Limiter) Hold(ctx context.Context, key string, limit ratelimit.Limit, n int, ttl time.Duration) (ratelimit.Result, error) {
	if err := l.check(key, limit, n); err != nil {
		return ratelimit.Result{Limit: limit}, err
	}
	if ttl < time.Microsecond || ttl > maxUS*time.Microsecond {
		return ratelimit.Result{Limit: limit}, fmt.Errorf("%w: distributed: Hold: ttl = %v, want 1µs to 2^53µs", args.ErrInvalidRequest, ttl)
	}
	reserve, err := l.reserve(ctx, limit, n)
	if err != nil {
		return ratelimit.Result{Limit: limit}, err
	}
	vals, err := l.runHold(ctx, "hold", key, limit, n, reserve, ttl.Microseconds(), 0, 0, 0)
	if err != nil {
		return ratelimit.Result{Limit: limit}, err
	}
	res := resultOf(vals[2:7], limit)
	if res.Allowed {
		res.Charge = ratelimit.Charge{At: instant(vals[1]), Part: holdPart + strconv.Itoa(n) + ":" + strconv.FormatInt(ttl.Microseconds(), 10)}
	}
	return res, nil
}

// parseHold returns the tokens held and the TTL in µs of a hold's Charge.Part, and whether
// it is one.
func parseHold(part string) (n int, ttl int64, ok bool) {
	rest, ok := strings.CutPrefix(part, holdPart)
	if !ok {
		return 0, 0, false
	}
	ns, ts, ok := strings.Cut(rest, ":")
	n, err1 := strconv.Atoi(ns)
	ttl, err2 := strconv.ParseInt(ts, 10, 64)
	return n, ttl, ok && err1 == nil && err2 == nil && n >= 1 && ttl >= 1
}

// settleHold is Settle (mode "settle") or Refund (mode "refund") of the hold whose Charge
// is c, which held reserved tokens, to actual; c.Part is a hold's.
func (l *Limiter) settleHold(ctx context.Context, mode, key string, limit ratelimit.Limit, c ratelimit.Charge, reserved, actual int) (ratelimit.Result, error) {
	n, ttl, ok := parseHold(c.Part)
	if !ok || n != reserved || c.At.IsZero() {
		return ratelimit.Result{Limit: limit}, fmt.Errorf("%w: distributed: Settle: the charge is of no hold of %d tokens", args.ErrInvalidRequest, reserved)
	}
	if err := l.check(key, limit, 1); err != nil {
		return ratelimit.Result{Limit: limit}, err
	}
	if actual-reserved > 2*limit.Burst {
		return ratelimit.Result{Limit: limit}, fmt.Errorf("%w: distributed: Settle: an overrun of %d tokens is more than 2·Burst", ratelimit.ErrExceedsBurst, actual-reserved)
	}
	reserve, err := l.reserve(ctx, limit, 1)
	if err != nil {
		return ratelimit.Result{Limit: limit}, err
	}
	vals, err := l.runHold(ctx, mode, key, limit, 1, reserve, ttl, c.At.Sub(epoch).Microseconds(), reserved, actual)
	if err != nil {
		return ratelimit.Result{Limit: limit}, err
	}
	res := resultOf(vals[2:7], limit)
	switch vals[0] {
	case 0:
		return res, errDebt
	case 2:
		return res, fmt.Errorf("%w: distributed: Settle: an overrun on %v (a token or leaky bucket without a warm-up or KeepUsage keeps a debt)",
			ratelimit.ErrNotSupported, args.Resolve(limit, l.algorithm).Algorithm)
	}
	return res, nil
}

// runHold runs hold.lua in mode on the bucket of (key, limit) and its holds.
func (l *Limiter) runHold(ctx context.Context, mode, key string, limit ratelimit.Limit, n, reserve int, ttl, at int64, reserved, actual int) ([]int64, error) {
	alg := l.algorithmFor(limit)
	var g group
	g.add(0, l.key(key, alg.tag, limit), limit, n, alg, reserve)
	argv := append([]any{mode}, g.perKey...)
	argv = append(argv, ttl, at, reserved, actual)
	if l.now != nil {
		argv = append(argv, l.clientNow(), l.skew)
	}
	vals, err := l.run(ctx, holdScript.on(l.now != nil), []string{g.keys[0], holdsKey(g.keys[0])}, argv, nil)
	if err != nil {
		return nil, invalidState(err)
	}
	if len(vals) != 8 {
		return nil, fmt.Errorf("distributed: the hold script returned %d values, want 8", len(vals))
	}
	return vals, nil
}

// holdsKey returns the key of the holds of the bucket whose key is bucket, in its hash slot:
// bucket with ":holds" appended when it has a hash tag, else bucket braced, so that the
// whole of it is the tag, when it holds no "}" (else, having no tag, bucket's slot is the
// one of all its bytes, which no key of another text is sure to share: its holds are then in
// a key of that slot found by a suffix). No bucket key ends with ":holds": every one ends
// with an algorithm's tag, a number or a period.
func holdsKey(bucket string) string {
	if open := strings.IndexByte(bucket, '{'); open >= 0 {
		if n := strings.IndexByte(bucket[open+1:], '}'); n > 0 {
			return bucket + ":holds"
		}
	}
	if !strings.Contains(bucket, "}") {
		return "{" + bucket + "}:holds"
	}
	want := slot(bucket)
	for i := 0; ; i++ {
		k := "{" + strconv.Itoa(i) + "}" + bucket + ":holds"
		if slot(k) == want {
			return k
		}
	}
}
