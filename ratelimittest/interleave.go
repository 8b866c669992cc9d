package ratelimittest

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
)

// checkInterleavings plays count operations drawn from seed — AllowN, AllowAll, Peek,
// Refund and Reset on three keys under two limits, with the clock moving between them — on
// h and a fresh harness like it, whose Limiter must be a MultiLimiter and an Inspector, and checks
// two things:
//
//   - Every answer against a reference model of the buckets, for the algorithms that have
//     one here: the fixed window and the sliding log exactly (whole microseconds), the token
//     bucket's Allowed and Remaining (its durations are rounded, and the rules of Run check
//     them). AllowAll is, in the model, every entry's AllowN answer, charged only if all
//     allow.
//   - Peek changes nothing: the same operations without the Peeks, on a fresh harness, get
//     the very same answers, for every algorithm.
func checkInterleavings(t testing.TB, h harness, seed uint64, count int) {
	t.Helper()
	ops := randomCalls(seed, count)
	m := newModel(h.Algorithm)
	with := playCalls(t, h, ops, m)
	var without []call
	for _, op := range ops {
		if op.kind != peekCall {
			without = append(without, op)
		} else if op.advance > 0 {
			without = append(without, call{kind: advanceCall, advance: op.advance})
		}
	}
	h2 := h.fresh()
	got := playCalls(t, h2, without, nil)
	var want []string
	for i, op := range ops {
		if op.kind != peekCall {
			want = append(want, with[i])
		}
	}
	var gotAnswers []string
	for i, op := range without {
		if op.kind != advanceCall {
			gotAnswers = append(gotAnswers, got[i])
		}
	}
	require.Equal(t, want, gotAnswers, "the Peeks changed a later answer")
}

type callKind int

const (
	allowNCall callKind = iota
	allowAllCall
	peekCall
	refundCall
	resetCall
	advanceCall
)

// call is one operation: after moving the clock by advance, kind on the buckets of reqs.
type call struct {
	kind    callKind
	advance time.Duration
	reqs    []ratelimit.Request
}

// The buckets the operations share: three keys, two limits.
var (
	interleaveKeys   = []string{"a", "b", "c"}
	interleaveLimits = []ratelimit.Limit{{Rate: 4, Burst: 3}, {Rate: 1, Burst: 5}}
)

func randomCalls(seed uint64, count int) []call {
	rng := rand.New(rand.NewPCG(seed, 1))
	bucket := func() ratelimit.Request {
		return ratelimit.Request{
			Key:   interleaveKeys[rng.IntN(len(interleaveKeys))],
			Limit: interleaveLimits[rng.IntN(len(interleaveLimits))],
			N:     1 + rng.IntN(3),
		}
	}
	calls := make([]call, count)
	for i := range calls {
		c := call{advance: time.Duration(rng.IntN(5)*rng.IntN(100)) * time.Millisecond}
		switch r := rng.IntN(10); {
		case r < 3:
			c.kind, c.reqs = allowNCall, []ratelimit.Request{bucket()}
		case r < 6:
			c.kind = allowAllCall
			for len(c.reqs) < 2+rng.IntN(2) {
				q := bucket()
				q.N = 1 + rng.IntN(2)
				if !containsBucket(c.reqs, q) {
					c.reqs = append(c.reqs, q)
				}
			}
		case r < 8:
			c.kind, c.reqs = peekCall, []ratelimit.Request{bucket()}
		case r < 9:
			c.kind, c.reqs = refundCall, []ratelimit.Request{bucket()}
		default:
			c.kind, c.reqs = resetCall, []ratelimit.Request{bucket()}
		}
		calls[i] = c
	}
	return calls
}

func containsBucket(reqs []ratelimit.Request, q ratelimit.Request) bool {
	for _, r := range reqs {
		if r.Key == q.Key && r.Limit == q.Limit {
			return true
		}
	}
	return false
}

// playCalls plays calls on h, checks each answer against m if there is one, and returns each
// answer printed, for comparison.
func playCalls(t testing.TB, h harness, calls []call, m model) []string {
	t.Helper()
	ctx := context.Background()
	ml := capability[ratelimit.MultiLimiter](h.Limiter)
	ins := capability[ratelimit.Inspector](h.Limiter)
	var u int64 = NewClock().Now().UnixMicro()
	answers := make([]string, len(calls))
	for i, c := range calls {
		h.Advance(c.advance)
		u += c.advance.Microseconds()
		var got []ratelimit.Result
		var err error
		switch c.kind {
		case allowNCall:
			var res ratelimit.Result
			res, err = h.Limiter.AllowN(ctx, c.reqs[0].Key, c.reqs[0].Limit, c.reqs[0].N)
			got = []ratelimit.Result{res}
		case allowAllCall:
			var mr ratelimit.MultiResult
			mr, err = ml.AllowAll(ctx, c.reqs)
			got = mr.Results
			if err == nil && m != nil {
				allowed := true
				for _, r := range mr.Results {
					allowed = allowed && r.Allowed
				}
				require.Equal(t, allowed, mr.Allowed, "call %d", i)
			}
		case peekCall:
			var res ratelimit.Result
			res, err = ins.Peek(ctx, c.reqs[0].Key, c.reqs[0].Limit, c.reqs[0].N)
			got = []ratelimit.Result{res}
		case refundCall:
			var res ratelimit.Result
			res, err = ins.Refund(ctx, c.reqs[0].Key, c.reqs[0].Limit, c.reqs[0].N, ratelimit.Charge{})
			got = []ratelimit.Result{res}
		case resetCall:
			err = ins.Reset(ctx, c.reqs[0].Key, c.reqs[0].Limit)
		}
		require.NoError(t, err, "call %d", i)
		if m != nil && c.kind != advanceCall {
			want := m.play(c, u)
			for j := range want {
				m.compare(t, want[j], got[j], fmt.Sprintf("call %d (%v), entry %d, at %d µs", i, c.kind, j, u))
			}
		}
		answers[i] = fmt.Sprint(got)
	}
	return answers
}

// model is a reference for the buckets of one algorithm.
type model interface {
	// play applies c at u (Unix µs) and returns the Results the limiter must give.
	play(c call, u int64) []ratelimit.Result
	// compare checks got against want, as closely as the model can tell.
	compare(t testing.TB, want, got ratelimit.Result, msg string)
}

func newModel(a ratelimit.Algorithm) model {
	switch a {
	case ratelimit.TokenBucket:
		return &bucketModel{st: map[bucketID]bucketState{}, alg: tokenModel{}}
	case ratelimit.FixedWindow:
		return &bucketModel{st: map[bucketID]bucketState{}, alg: fixedModel{}, exact: true}
	case ratelimit.SlidingWindowLog:
		return &bucketModel{st: map[bucketID]bucketState{}, alg: logModel{}, exact: true}
	}
	return nil
}

type bucketID struct {
	key   string
	limit ratelimit.Limit
}

// bucketState is one bucket in a model: a TAT in tokens (token bucket), a window index and
// count (fixed window) or the times of the tokens admitted (sliding log).
type bucketState struct {
	tat          float64
	index, count int64
	times        []int64
}

// algorithmModel decides, charges and refunds one bucket; a missing bucket is the zero
// bucketState with fresh true.
type algorithmModel interface {
	decide(st bucketState, fresh bool, limit ratelimit.Limit, u int64, n int) (ratelimit.Result, bucketState)
	refund(st bucketState, limit ratelimit.Limit, u int64, n int) bucketState
}

type bucketModel struct {
	st    map[bucketID]bucketState
	alg   algorithmModel
	exact bool
}

func (m *bucketModel) answer(q ratelimit.Request, u int64, n int) (ratelimit.Result, bucketState) {
	id := bucketID{q.Key, q.Limit}
	st, ok := m.st[id]
	return m.alg.decide(st, !ok, q.Limit, u, n)
}

func (m *bucketModel) play(c call, u int64) []ratelimit.Result {
	q := c.reqs[0]
	id := bucketID{q.Key, q.Limit}
	switch c.kind {
	case allowNCall:
		res, next := m.answer(q, u, q.N)
		if res.Allowed {
			m.st[id] = next
		}
		return []ratelimit.Result{res}
	case allowAllCall:
		results := make([]ratelimit.Result, len(c.reqs))
		nexts := make([]bucketState, len(c.reqs))
		allowed := true
		for i, r := range c.reqs {
			results[i], nexts[i] = m.answer(r, u, r.N)
			allowed = allowed && results[i].Allowed
		}
		if allowed {
			for i, r := range c.reqs {
				m.st[bucketID{r.Key, r.Limit}] = nexts[i]
			}
		}
		return results
	case peekCall:
		res, _ := m.answer(q, u, q.N)
		return []ratelimit.Result{res}
	case refundCall:
		if st, ok := m.st[id]; ok {
			m.st[id] = m.alg.refund(st, q.Limit, u, min(q.N, q.Limit.Burst))
		}
		res, _ := m.answer(q, u, 1)
		return []ratelimit.Result{res}
	case resetCall:
		delete(m.st, id)
	}
	return nil
}

func (m *bucketModel) compare(t testing.TB, want, got ratelimit.Result, msg string) {
	t.Helper()
	if m.exact {
		got.Charge = ratelimit.Charge{} // the charge rules check it
		require.Equal(t, want, got, msg)
		return
	}
	require.Equal(t, want.Allowed, got.Allowed, msg)
	require.Equal(t, want.Remaining, got.Remaining, msg)
}

// tokenModel is GCRA as gcra.lua computes it: a TAT in tokens since 2020, the clock worth
// Rate/10⁶ tokens a microsecond.
type tokenModel struct{}

const tokenEpochUS = 1577836800 * 1_000_000

func (tokenModel) decide(st bucketState, fresh bool, limit ratelimit.Limit, u int64, n int) (ratelimit.Result, bucketState) {
	now := float64(u-tokenEpochUS) * limit.Rate / 1e6
	tat := st.tat
	if fresh || tat < now {
		tat = now
	}
	res := ratelimit.Result{Limit: limit, Allowed: tat-now <= float64(limit.Burst-n)}
	if res.Allowed {
		tat += float64(n)
	}
	res.Remaining = max(int(math.Floor(float64(limit.Burst)-(tat-now))), 0)
	return res, bucketState{tat: tat}
}

func (tokenModel) refund(st bucketState, _ ratelimit.Limit, _ int64, n int) bucketState {
	st.tat -= float64(n) // at or before now, it is a full bucket
	return st
}

// fixedModel is the fixed window: the count of the window, aligned to the Unix epoch, that
// last admitted.
type fixedModel struct{}

func (fixedModel) decide(st bucketState, _ bool, limit ratelimit.Limit, u int64, n int) (ratelimit.Result, bucketState) {
	w, _ := args.Window(limit)
	index, elapsed := u/w, u%w
	count := st.count
	if st.index != index {
		count = 0
	}
	res := ratelimit.Result{Limit: limit, Allowed: count+int64(n) <= int64(limit.Burst)}
	if res.Allowed {
		count += int64(n)
	}
	res.Remaining = limit.Burst - int(count)
	left := time.Duration(w-elapsed) * time.Microsecond
	if count > 0 {
		res.ResetAfter = left
	}
	if !res.Allowed {
		res.RetryAfter = left
	}
	return res, bucketState{index: index, count: count}
}

func (fixedModel) refund(st bucketState, limit ratelimit.Limit, u int64, n int) bucketState {
	if w, _ := args.Window(limit); st.index == u/w {
		st.count = max(st.count-int64(n), 0)
	}
	return st
}

// logModel is the sliding log: the time of every admitted token.
type logModel struct{}

func (logModel) decide(st bucketState, _ bool, limit ratelimit.Limit, u int64, n int) (ratelimit.Result, bucketState) {
	w, _ := args.LogWindow(limit)
	var window []int64
	for _, at := range st.times {
		if at > u-w {
			window = append(window, at)
		}
	}
	count := len(window)
	us := func(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
	res := ratelimit.Result{Limit: limit, Allowed: count+n <= limit.Burst}
	if res.Allowed {
		for range n {
			window = append(window, u)
		}
		res.Remaining = limit.Burst - count - n
		res.ResetAfter = us(w)
		return res, bucketState{times: window}
	}
	k := count + n - limit.Burst
	res.Remaining = limit.Burst - count
	res.RetryAfter = us(window[k-1] + w - u)
	res.ResetAfter = us(window[count-1] + w - u)
	return res, st
}

func (logModel) refund(st bucketState, limit ratelimit.Limit, u int64, n int) bucketState {
	w, _ := args.LogWindow(limit)
	times := append([]int64(nil), st.times...)
	for ; n > 0 && len(times) > 0 && times[len(times)-1] > u-w; n-- {
		times = times[:len(times)-1]
	}
	return bucketState{times: times}
}
