package distributed

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/internal/scriptsrc"
)

var (
	//go:embed acquire.lua
	acquireLua    string
	acquireScript = redis.NewScript(acquireLua)
	//go:embed release.lua
	releaseLua    string
	releaseScript = redis.NewScript(releaseLua)
	//go:embed renew.lua
	renewLua    string
	renewScript = redis.NewScript(renewLua)
	//go:embed members.lua
	membersLua    string
	membersScript = redis.NewScript(membersLua)

	// The scripts' hashes, boxed once for the commands' arguments.
	acquireSHA any = acquireScript.Hash()
	releaseSHA any = releaseScript.Hash()
)

// processor is what every go-redis client has beside redis.Scripter: a command built once
// per permit runs without the allocations of building its arguments.
type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// deadline is a context that is its parent with an earlier deadline, and no timer: go-redis
// reads the deadline for the socket's, and a round trip that passes it fails as a timeout.
// One is embedded in each lease, so that bounding a round trip allocates nothing (a
// context.WithTimeout costs a timer and three allocations per call).
type deadline struct {
	context.Context
	at time.Time
}

// Deadline returns the earlier of the bound and the parent's deadline.
func (d *deadline) Deadline() (time.Time, bool) {
	if p, ok := d.Context.Deadline(); ok && p.Before(d.at) {
		return p, true
	}
	return d.at, true
}

// bounded returns ctx bounded by d from now, in the storage dl: ctx itself when d is 0 (no
// bound) or ctx's own deadline comes first.
func bounded(ctx context.Context, d time.Duration, dl *deadline) context.Context {
	if d <= 0 {
		return ctx
	}
	at := time.Now().Add(d)
	if p, ok := ctx.Deadline(); ok && !p.After(at) {
		return ctx
	}
	dl.Context, dl.at = ctx, at
	return dl
}

// errTimeout is the cause of the limiter's own deadline: a failure of Redis, told apart
// from a caller whose own context ended first. It wraps context.DeadlineExceeded too, as
// every deadline does.
var errTimeout = fmt.Errorf("distributed: %w (%w)", ratelimit.ErrTimeout, context.DeadlineExceeded)

// try runs the acquisition script once for ls. A grant puts ls among the held leases and
// returns its permit; after a refusal ls is the caller's again; a failure leaves ls to be released
// in the background (its script may have run, its reply lost), so that the caller never
// waits for that release.
func (l *Limiter) try(ctx context.Context, ls *lease) (concurrency.Permit, bool, error) {
	ls.spare = false
	l.name(ls)
	start := time.Now()
	n, err := l.eval(ctx, l.timeout, ls, acquireScript, ls.aargs[:])
	if err != nil {
		if errors.Is(err, ratelimit.ErrInvalidState) {
			l.putLease(ls)
		} else {
			l.releaseLater(ls)
		}
		return concurrency.Permit{}, false, err
	}
	if n == 0 {
		return concurrency.Permit{}, false, nil
	}
	ls.spare = n > 1
	ls.renewed = start
	l.mu.Lock()
	l.held.push(ls)
	l.mu.Unlock()
	return concurrency.NewPermit(ls, ls.gen.Load()), true, nil
}

// eval runs script with args (its command's: "evalsha", hash, 1, key, …) within bound
// (none when 0), and returns its integer.
func (l *Limiter) eval(ctx context.Context, bound time.Duration, ls *lease, script *redis.Script, args []any) (int64, error) {
	bctx := bounded(ctx, bound, &ls.dl)
	n, err := l.evalBounded(bctx, script, args)
	if err != nil {
		return 0, l.classify(ctx, bctx, err)
	}
	return n, nil
}

// evalBounded runs the command args of script on ctx: through the Client of NewWith, or
// through Process when the client has it (loading the script on NOSCRIPT), otherwise
// through script.Run.
func (l *Limiter) evalBounded(ctx context.Context, script *redis.Script, args []any) (int64, error) {
	if l.seam != nil {
		var dst [1]int64
		keys := [1]string{args[3].(string)}
		vals, err := l.seam.Eval(ctx, script.Hash(), scriptsrc.Of(script), keys[:], args[4:], dst[:0])
		if err == nil && len(vals) != 1 {
			err = fmt.Errorf("the script returned %d values, want 1", len(vals))
		}
		if err != nil {
			return 0, err
		}
		return vals[0], nil
	}
	if l.proc == nil {
		keys := []string{args[3].(string)}
		return script.Run(ctx, l.client, keys, args[4:]...).Int64()
	}
	for attempt := 0; ; attempt++ {
		cmd := redis.NewCmd(ctx, args...)
		_ = l.proc.Process(ctx, cmd)
		n, err := cmd.Int64()
		if err == nil || attempt > 0 || !strings.HasPrefix(err.Error(), "NOSCRIPT") {
			return n, err
		}
		if err := script.Load(ctx, l.client).Err(); err != nil {
			return 0, err
		}
	}
}

// classify wraps err, returned by a call made with bctx (ctx bounded by the limiter), with
// what it means: the caller's context ended, the limiter's deadline passed
// (ratelimit.ErrTimeout), the key holds another type (ratelimit.ErrInvalidState), or the
// client failed.
func (l *Limiter) classify(ctx, bctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("distributed: %w", ctx.Err())
	}
	if strings.Contains(err.Error(), "WRONGTYPE") {
		return fmt.Errorf("distributed: %w: %w", ratelimit.ErrInvalidState, err)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
		if d, ok := ctx.Deadline(); ok {
			if dl, _ := bctx.Deadline(); !dl.Before(d) {
				// The caller's deadline was the socket's, which fired a moment before ctx's
				// own timer: wait for it, so that the error says whose deadline it was.
				<-ctx.Done()
				return fmt.Errorf("distributed: %w", ctx.Err())
			}
		}
		return errTimeout
	}
	return fmt.Errorf("distributed: %w", err)
}
