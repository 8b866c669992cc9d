package distributed

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/internal/calendar"
	"github.com/sluice-go/ratelimit/internal/nilarg"
	"github.com/sluice-go/ratelimit/priority"
)

// MaxRate is the highest Limit.Rate the Redis backend accepts, in tokens per second: one
// token per microsecond, the resolution of the Redis clock. Higher rates return
// ratelimit.ErrInvalidArgument. To limit in finer units (bytes, say), count in larger ones.
const MaxRate = 1e6

// Limiter is a ratelimit.Limiter whose buckets live in Redis, so that every instance of a
// service shares them. Each decision is one atomic Lua script run on one key, timed by the
// Redis clock. It is safe for concurrent use.
type Limiter struct {
	client    redis.Scripter // the go-redis client (New), or nil
	seam      Client         // the Client (NewWith), or nil
	prefix    string
	timeout   time.Duration
	bound     *bound // the deadline of timeout, or nil for none
	algorithm ratelimit.Algorithm
	// now, with WithClientClock, is the clock the scripts take their time from instead of
	// Redis TIME; skew is the bound on its hosts' skew in whole milliseconds, by which keys
	// outlive their state. now is nil on the Redis clock, the default.
	now  func() time.Time
	skew int64
	// sharded: the client spreads keys over servers by hash slot (see AllowAll).
	sharded   bool
	crossSlot CrossSlot
	reserves  priority.Reserves
	// guard: the client ignores context deadlines while it waits on the network, so the
	// limiter waits for the reply in a goroutine of its own and stops at the deadline.
	guard bool
	// batch, when the client can pipeline, sends decisions made concurrently together.
	batch *batcher
	// proc, when the client can process a command it is given (every go-redis client
	// can), runs a single-key decision's EVALSHA from the arguments of its request.
	proc processor
	// reload, for a Cluster client, asks it to read the cluster's slots again: see run.
	reload func(context.Context)
	closed atomic.Bool
	// stop is closed by Close, to end the Waits that hold for their turn.
	stop chan struct{}
	// warm: a Cluster client has answered once, so it holds its map of the slots. Until
	// then the limiter guards its calls as it does a client's that ignores deadlines: the
	// first load of the map dials the seeds and retries without regard to the context.
	warm atomic.Bool
	// netErr holds the client's last dial error, or nil: see network.
	netErr atomic.Pointer[error]
	// quota runs ratelimit.CalendarQuota, in the time zones of zones (see quota.go).
	quota, keepQuota algorithm
	zones            calendar.Zones
	// appClock, in tests only, is the clock periodsArg reads instead of time.Now (or clock).
	appClock func() time.Time
}

var _ ratelimit.Limiter = (*Limiter)(nil)

// New returns a Limiter that keeps its buckets in Redis through client, which may be any
// go-redis v9 client: *redis.Client (also from redis.NewFailoverClient, for Sentinel),
// *redis.ClusterClient, *redis.Ring, or a redis.UniversalClient holding one of them.
//
// New does not contact Redis, so a service starts while Redis is down; the script is loaded
// on first use, and again whenever Redis has lost it (SCRIPT FLUSH, restart, failover).
// It returns an error only for a nil client (also a nil *redis.Client or other nil
// pointer), reserves that cannot be enforced (WithReserves) or an algorithm that is none of
// the ratelimit package's (WithAlgorithm). Call Check to ask Redis at
// start-up. New adds a hook to the client (on a Cluster or a Ring, to the node clients it
// creates from then on) that keeps its last dial error, for the limiter's errors to name;
// the hook stays with the client, so build a limiter once per client, not per request.
//
// For the limiter's deadline (WithTimeout) to cut a stalled network read short without
// extra cost, build the client with ContextTimeoutEnabled: true. Otherwise go-redis ignores
// context deadlines on the socket (it would wait out its ReadTimeout, seconds by default, and
// retry), and the limiter instead waits for each reply in a goroutine of its own, returning at the
// deadline while the abandoned call finishes in the background.
func New(client redis.Scripter, opts ...Option) (*Limiter, error) {
	if nilarg.Is(client) {
		return nil, errors.New("distributed: New: nil client")
	}
	return newLimiter(client, nil, opts)
}

// newLimiter returns a Limiter on client, a go-redis one (New), or on seam (NewWith).
func newLimiter(client redis.Scripter, seam Client, opts []Option) (*Limiter, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if err := o.reserves.Validate(); err != nil {
		return nil, fmt.Errorf("distributed: New: WithReserves: %w", err)
	}
	if err := args.CheckDefault(o.algorithm); err != nil {
		return nil, fmt.Errorf("distributed: New: %w", err)
	}
	l := &Limiter{
		client:    client,
		seam:      seam,
		prefix:    o.prefix,
		timeout:   o.timeout,
		algorithm: o.algorithm,
		now:       o.now,
		skew:      o.skew.Milliseconds(),
		crossSlot: o.crossSlot,
		reserves:  o.reserves,
		stop:      make(chan struct{}),
	}
	if l.timeout > 0 {
		l.bound = newBound(l.timeout)
	}
	l.quota, l.keepQuota = l.newQuota(quotaTag, quotaScript), l.newQuota(keepQuotaTag, keepQuotaScript)
	if seam != nil {
		l.sharded = seam.Sharded()
		return l, nil
	}
	l.sharded, l.guard = sharded(client), !honoursContext(client)
	if p, ok := client.(pipeliner); ok {
		l.batch = &batcher{client: p, bound: l.bound}
	}
	if c, ok := client.(*redis.ClusterClient); ok {
		l.reload = c.ReloadState
	}
	l.proc, _ = client.(processor)
	watchDials(client, &l.netErr)
	return l, nil
}

// honoursContext reports whether client stops waiting on the network when a context ends.
func honoursContext(client redis.Scripter) bool {
	switch c := client.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		return c.Options().ContextTimeoutEnabled
	}
	return false
}

// Allow takes one token from the bucket of (key, limit) if it holds one. It is AllowN with
// n = 1.
func (l *Limiter) Allow(ctx context.Context, key string, limit ratelimit.Limit) (ratelimit.Result, error) {
	return l.AllowN(ctx, key, limit, 1)
}

// AllowN takes n tokens from the bucket of (key, limit) if it holds n, and otherwise takes
// none. A request whose context carries a priority below priority.Critical must leave its
// reserve in the bucket (WithReserves): it is decided as under a Burst less the reserve,
// and n above that is refused with ratelimit.ErrExceedsBurst. Invalid arguments are
// rejected before any round trip, with the same errors as every backend. When Redis fails or
// the deadline passes, AllowN returns the error with a Result that has only Limit set, and the
// caller decides (middleware fails open or closed). A bucket whose key holds a value no
// script of this package writes (another type, text, a number out of range) is decided as a
// new bucket, whose first request is always admitted and replaces the value with the
// bucket's own: the key is limited from its first call on.
func (l *Limiter) AllowN(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, error) {
	if err := l.check(key, limit, n); err != nil {
		return ratelimit.Result{Limit: limit}, err
	}
	reserve, err := l.reserve(ctx, limit, n)
	if err != nil {
		return ratelimit.Result{Limit: limit}, err
	}
	alg := l.algorithmFor(limit)
	req := l.request(alg, key, limit, n, nil, reserve)
	r, err := l.run(ctx, alg.scripts.on(l.now != nil), req.keys[:], req.argv, req)
	if err != nil {
		return ratelimit.Result{Limit: limit}, invalidState(err)
	}
	return resultOf(r, limit), nil
}

// reserve returns the reserve of a request for n tokens under limit, at the priority ctx
// carries: 0 for priority.Critical, which costs a single read of ctx. n above the burst
// left to the priority is an error wrapping ratelimit.ErrExceedsBurst.
func (l *Limiter) reserve(ctx context.Context, limit ratelimit.Limit, n int) (int, error) {
	p := priority.From(ctx)
	if p == priority.Critical {
		return 0, nil
	}
	reserve, err := args.Reserve(l.reserves, p, limit, n)
	if err != nil {
		return 0, fmt.Errorf("distributed: %w", err)
	}
	return reserve, nil
}

// request is one single-key script call: its key, its arguments, the command that carries
// them and the script's answer, in one allocation rather than one each. At 8 goroutines on
// one core a decision is bound by the client's CPU, and every allocation counts.
type request struct {
	keys [1]string
	argv []any   // ARGV, in cmd
	cmd  [11]any // EVALSHA, the script's SHA1, 1, KEYS[1], ARGV[1..7]
	vals [6]int64
	buf  [80]byte // the key's bytes, when they fit
	ctx  bounded  // the call's context under the limiter's deadline (see run)
}

// request returns the call that decides (key, limit, n) with alg: its key (see key) and
// its arguments (see argv).
func (l *Limiter) request(alg algorithm, key string, limit ratelimit.Limit, n int, own any, reserve int) *request {
	r := new(request)
	r.keys[0] = l.appendKey(r.buf[:0], key, alg.tag, limit)
	r.argv = l.argv(r.cmd[4:4], alg, limit, n, own, reserve)
	return r
}

// argv appends a single-key script's arguments (see algorithms.go) to dst: ARGV[1..3], the
// algorithm's own ARGV[4] or own (the leaky bucket's Wait bound) when not nil, and ARGV[5],
// the reserve, only when there is one, so that a request that keeps none sends no more;
// with the client's clock, every one of them, then its two (see clientNow).
func (l *Limiter) argv(dst []any, alg algorithm, limit ratelimit.Limit, n int, own any, reserve int) []any {
	argv := append(dst, limit.Rate, limit.Burst, n)
	all := l.now != nil
	switch {
	case alg.args != nil:
		argv = alg.args(argv, limit)
	case own != nil:
		argv = append(argv, own)
	case reserve > 0 || all:
		argv = append(argv, "")
	}
	if reserve > 0 || all {
		argv = append(argv, reserve)
	}
	if all {
		argv = append(argv, l.clientNow(), l.skew)
	}
	return argv
}

// resultOf reads a script's answer: {allowed, remaining, retry-after µs, reset-after µs},
// then, if present, delay µs and the instant of the decision, µs since epoch, which an
// admission's Charge holds. Remaining is held to [0, Burst] whatever the script says.
func resultOf(r []int64, limit ratelimit.Limit) ratelimit.Result {
	res := ratelimit.Result{
		Allowed:    r[0] == 1,
		Limit:      limit,
		Remaining:  int(min(max(r[1], 0), int64(limit.Burst))),
		RetryAfter: time.Duration(r[2]) * time.Microsecond,
		ResetAfter: time.Duration(r[3]) * time.Microsecond,
	}
	if len(r) > 4 {
		res.Delay = time.Duration(r[4]) * time.Microsecond
	}
	if len(r) > 5 && res.Allowed {
		res.Charge.At = instant(r[5])
	}
	return res
}

// Wait, with ratelimit.LeakyBucket (the limit's algorithm, or the limiter's default for a
// limit that names none), takes a place in the bucket's queue and sleeps until its
// turn. The script takes the place atomically, and only if the turn comes by ctx's deadline:
// otherwise Wait fails at once with an error wrapping context.DeadlineExceeded, having
// taken nothing. When the queue is full, Wait sleeps until a place frees up and tries
// again; for a request whose context carries a priority below priority.Critical, the queue
// is full when only its reserve is left (WithReserves). If ctx ends while Wait sleeps for its turn,
// it returns ctx's error and the place stays taken: the request it held has gone by.
//
// With ratelimit.TokenBucket (without a Warmup or KeepUsage) Wait books its token's slot
// with Reserve, in one script, and sleeps until it: callers in every process are spaced on
// the one Redis clock. A slot past ctx's deadline fails at once, having booked nothing.
// With any other algorithm Wait returns ratelimit.ErrNotSupported: the windows keep no
// timeline to book a slot on. Use Allow and the Result's RetryAfter. After Close, and when
// Close is called while it sleeps, Wait returns ratelimit.ErrClosed.
func (l *Limiter) Wait(ctx context.Context, key string, limit ratelimit.Limit) error {
	if l.closed.Load() {
		return ratelimit.ErrClosed
	}
	a := args.Resolve(limit, l.algorithm).Algorithm
	if a == ratelimit.TokenBucket && limit.Warmup == 0 && !limit.KeepUsage {
		return l.waitBooked(ctx, key, limit)
	}
	if a != ratelimit.LeakyBucket {
		return fmt.Errorf("%w: Wait on the Redis backend with %v", ratelimit.ErrNotSupported, a)
	}
	return l.waitInQueue(ctx, key, limit)
}

// Close makes every later call return ratelimit.ErrClosed, and so do the Waits holding for
// their turn, at once. It does not close the client, which belongs to the caller. Close is
// idempotent and always returns nil.
func (l *Limiter) Close() error {
	if l.closed.CompareAndSwap(false, true) {
		close(l.stop)
	}
	return nil
}

func (l *Limiter) check(key string, limit ratelimit.Limit, n int) error {
	if l.closed.Load() {
		return ratelimit.ErrClosed
	}
	if err := args.Check(key, limit, n); err != nil { // Limit.Validate among them
		return err
	}
	if err := l.checkSupported(limit); err != nil {
		return err
	}
	return l.checkLimit(limit)
}

// key returns the Redis key of the bucket: prefix, the caller's key, the tag of the algorithm
// that decides it (the limit's, or the limiter's default: see algorithmFor), then
// the limit, as in "ratelimit:user:42:tb:10:20" for a token bucket of 10 tokens a second with
// a burst of 20, and its warm-up in whole microseconds if it has one (tag "tbw"), as in
// "ratelimit:user:42:tbw:10:20:30000000", and a quota's period (tag "cq"), as in
// "ratelimit:user:42:cq:0:10000:day@Europe/Paris". The tag, rate, burst, warm-up and period
// hold no colon, so the caller's key is everything between the prefix and the last three
// fields (four after "tbw" and "cq"), whatever it contains.
func (l *Limiter) key(key, tag string, limit ratelimit.Limit) string {
	return l.appendKey(make([]byte, 0, len(l.prefix)+len(key)+len(tag)+60), key, tag, limit)
}

// appendKey is key in b's room, if it is enough.
func (l *Limiter) appendKey(b []byte, key, tag string, limit ratelimit.Limit) string {
	if limit.KeepUsage {
		return l.appendKeepKey(b, key, tag, limit)
	}
	b = append(b, l.prefix...)
	b = append(b, key...)
	b = append(b, ':')
	b = append(b, tag...)
	b = append(b, ':')
	b = strconv.AppendFloat(b, limit.Rate, 'g', -1, 64)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(limit.Burst), 10)
	if limit.Warmup != 0 {
		b = append(b, ':')
		b = strconv.AppendInt(b, limit.Warmup.Microseconds(), 10)
	}
	if limit.Algorithm == ratelimit.CalendarQuota {
		b = append(b, ':')
		b = appendPeriod(b, limit.Period)
	}
	return unsafe.String(unsafe.SliceData(b), len(b)) // b is never written again
}

// clientNow returns the client clock's reading (WithClientClock) in whole microseconds
// since epoch, as the scripts count time.
func (l *Limiter) clientNow() int64 {
	return l.now().Sub(epoch).Microseconds()
}

// instant returns the time u µs after epoch, a script's reading of the Redis clock.
func instant(u int64) time.Time { return epoch.Add(time.Duration(u) * time.Microsecond) }

// errTimeout is the cause of the limiter's own deadline (WithTimeout), so that its errors
// tell a Redis too slow to answer (ratelimit.ErrTimeout, a failure of the backend) from a
// caller whose own context ended first. It wraps context.DeadlineExceeded too, as every
// deadline does.
var errTimeout = fmt.Errorf("%w (%w)", ratelimit.ErrTimeout, context.DeadlineExceeded)

// run runs script on keys and argv within the limiter's deadline and returns its
// integers: r, if not nil, is the single-key request that holds keys and argv (see eval).
// It is the one layer around the script call (eval): the deadline, the batch, the guard
// and what a failure tells the client.
//
// Within the limiter's deadline (WithTimeout), the call runs under a bounded context (see
// deadline.go), which carries the caller's values but not its cancellation: the call's own
// waits (the batcher's queue, a guarded call) watch the caller's context beside it, and
// go-redis stops at the deadline. Propagating the cancellation would cost every decision a
// cancel context and a channel of its own, and a lock of the caller's context (a server's
// request context is cancelable); what it would add is that a call waiting for a free
// connection of the client's pool leaves when its caller gives up rather than at the
// deadline.
//
// A Cluster client learns that a failover moved slots only from a MOVED reply, which a
// dead master never sends, or from its periodic reload (a minute by default): until then it
// sends those slots to the dead node. So when Redis itself fails to answer (no reply, or
// none in time) rather than the caller giving up, run asks the client to reload its slots;
// go-redis does that in the background, at most once per cooldown however often asked.
func (l *Limiter) run(ctx context.Context, script *redis.Script, keys []string, argv []any, r *request) ([]int64, error) {
	caller := ctx
	if l.bound != nil {
		now := time.Now()
		if d, ok := ctx.Deadline(); !ok || d.Sub(now) > l.timeout {
			var c *bounded
			if r != nil {
				c = &r.ctx
			} else {
				c = new(bounded)
			}
			if ctx.Done() != nil {
				ctx = context.WithoutCancel(ctx)
			}
			l.bound.set(c, ctx, now)
			ctx = c
		}
	}
	var queued *call
	if l.batch != nil {
		if queued = l.batch.enter(script, keys, argv, r); queued == nil {
			defer l.batch.release()
		}
	}
	var vals []int64
	var err error
	switch guard := l.guard || (l.reload != nil && !l.warm.Load()); {
	case queued != nil:
		vals, err = l.batch.await(ctx, caller, queued)
	case !guard || ctx.Done() == nil:
		vals, err = l.eval(ctx, script, keys, argv, r)
		vals, err = reply(ctx, caller, vals, err)
	default:
		type result struct {
			vals []int64
			err  error
		}
		done := make(chan result, 1)
		go func() {
			vals, err := l.eval(ctx, script, keys, argv, r)
			done <- result{vals, err}
		}()
		select {
		case res := <-done:
			vals, err = reply(ctx, caller, res.vals, res.err)
		case <-ctx.Done():
			err = fmt.Errorf("distributed: %w", cause(ctx))
		case <-caller.Done():
			err = fmt.Errorf("distributed: %w", context.Cause(caller))
		}
	}
	if err != nil {
		var reply redis.Error
		if l.reload != nil && caller.Err() == nil && !errors.As(err, &reply) {
			l.reload(context.Background())
		}
		return nil, l.network(err)
	}
	if l.reload != nil && !l.warm.Load() {
		l.warm.Store(true)
	}
	return vals, nil
}

// processor is a client that runs a command it is given: every go-redis client.
type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// eval is the script call, the seam of every script the limiter runs: through the Client
// of NewWith, or on the go-redis client as redis.Script.Run does (EVALSHA, then EVAL if
// Redis has lost the script), returning its integers. With r and a client that can process a
// command, the EVALSHA is built in r and its answer read into r.vals: the allocations of the
// command's arguments and of the answer's slice are r's.
func (l *Limiter) eval(ctx context.Context, script *redis.Script, keys []string, argv []any, r *request) ([]int64, error) {
	if l.seam != nil {
		return l.evalWith(ctx, script, keys, argv, r)
	}
	if r == nil || l.proc == nil {
		return script.Run(ctx, l.client, keys, argv...).Int64Slice()
	}
	cmd := r.evalSHA(ctx, script)
	_ = l.proc.Process(ctx, cmd)
	if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		return script.Eval(ctx, l.client, keys, argv...).Int64Slice()
	}
	return ints(cmd, r)
}

// evalSHA returns the EVALSHA of script that r holds, its arguments in r.cmd.
func (r *request) evalSHA(ctx context.Context, script *redis.Script) *redis.Cmd {
	r.cmd[0], r.cmd[1], r.cmd[2], r.cmd[3] = "evalsha", script.Hash(), 1, r.keys[0]
	cmd := redis.NewCmd(ctx, r.cmd[:4+len(r.argv)]...)
	cmd.SetFirstKeyPos(3) // KEYS[1], which a Cluster client routes by
	return cmd
}

// ints returns the integers cmd, a script's, answered: in r.vals when r holds them.
func ints(cmd *redis.Cmd, r *request) ([]int64, error) {
	if r == nil {
		return cmd.Int64Slice()
	}
	vals, err := cmd.Slice()
	if err != nil {
		return nil, err
	}
	if len(vals) > len(r.vals) {
		return cmd.Int64Slice()
	}
	for i, v := range vals {
		n, ok := v.(int64)
		if !ok {
			return nil, fmt.Errorf("the script returned a %T, want an integer", v)
		}
		r.vals[i] = n
	}
	return r.vals[:len(vals)], nil
}

// reply checks the script's answer to a call made under ctx for caller (see run). An
// error that came from the deadline (go-redis reports an i/o timeout) also wraps the
// context's error, so that callers can tell; when the caller's context has ended, its
// cause.
func reply(ctx, caller context.Context, vals []int64, err error) ([]int64, error) {
	if err != nil {
		why := context.Cause(caller)
		if why == nil {
			why = ended(ctx)
		}
		if why != nil && !errors.Is(err, why) {
			if errors.Is(err, ctx.Err()) { // go-redis's report of the deadline: no news
				return nil, fmt.Errorf("distributed: %w", why)
			}
			return nil, fmt.Errorf("distributed: %w: %w", why, err)
		}
		return nil, fmt.Errorf("distributed: %w", err)
	}
	if len(vals) < 4 {
		return nil, fmt.Errorf("distributed: the script returned %d values, want at least 4", len(vals))
	}
	return vals, nil
}

// ended returns why ctx has ended, or nil. A socket deadline set from ctx can fire a moment
// before ctx's own timer does: a deadline in the past counts as ended, and its cause, which
// tells the limiter's deadline from the caller's, is the one ctx is about to report. A
// bounded context (the limiter's deadline) says so itself, without waiting for its tick.
func ended(ctx context.Context) error {
	if c, ok := ctx.(*bounded); ok {
		return c.cause()
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		<-ctx.Done()
	}
	return context.Cause(ctx)
}
