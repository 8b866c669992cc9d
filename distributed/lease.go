package distributed

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
)

//go:embed lease.lua
var leaseFile string

// leaseScript grants chunks of a leased bucket (package lease); its keys' tag is "tl".
var leaseScript = newScriptPair(expand(leaseFile))

// leaseTag names a leased token bucket in the keys of its buckets: a hash of its TAT and
// its holders' records, never the value of a plain token bucket ("tb"); shard i of k is
// "tl<i>/<k>".
const leaseTag = "tl"

// LeaseRequest is one request of a holder (an instance of package lease) for a chunk of a
// leased bucket's tokens: see Limiter.Lease.
type LeaseRequest struct {
	// Instance names the holder: unique to the process, no space in it, at most 64 bytes.
	Instance string
	// Seq numbers the holder's requests for the bucket, from 1 up; a retry of a request
	// whose answer was lost repeats its Seq, and is answered again without being debited
	// twice. A Seq below the last one Redis saw does nothing (LeaseGrant.Stale).
	Seq uint64
	// Want is how many tokens the holder asks for, 0 to the limit's Burst.
	Want int
	// Held is how many tokens the holder keeps of earlier chunks, after Return.
	Held int
	// Return is how many tokens the holder gives back: tokens it will never spend.
	Return int
	// Lease is how long the record of what the holder holds lasts: past it, if the holder
	// has not asked again, Redis takes it for dead and gives what it held back to the
	// bucket. The holder must spend nothing of it after that.
	Lease time.Duration
	// Shard, of Shards, names one of the buckets a key is split over (package lease's
	// WithShards), each of which has a key of its own, under the limit given to Lease (the
	// shard's). Shards 0 and 1 are the one bucket of an unsplit key.
	Shard, Shards int
}

// LeaseGrant is Redis's answer to a LeaseRequest.
type LeaseGrant struct {
	// Tokens is how many tokens were granted: up to Want, all the bucket held if less.
	Tokens int
	// Remaining is how many whole tokens the bucket holds after the grant.
	Remaining int
	// RetryAfter is, when nothing was granted, how long until this holder's share of the
	// refill (the rate over the holders with a record) covers Want; zero otherwise.
	RetryAfter time.Duration
	// ResetAfter is how long until the bucket is full again if nothing takes from it.
	ResetAfter time.Duration
	// Replayed reports the answer to a Seq Redis had already decided, given again.
	Replayed bool
	// Stale reports a Seq older than the holder's last: nothing was done.
	Stale bool
	// At is the instant of the decision on the scripts' clock.
	At time.Time
}

// Lease runs one LeaseRequest on the leased bucket of (key, limit), atomically: it takes
// back what the records of dead holders held, then r.Return, then grants what the bucket
// holds up to r.Want, and records what r's holder now holds until r.Lease from now. A
// request with Want and Held both zero removes the holder's record. It is the call of
// package lease, which keeps the tokens and spends them; a leased bucket's key has its own
// tag ("tl"), so that it is never the bucket of a plain token bucket (AllowN). Only the
// token bucket can be leased: a limit naming another algorithm, a warm-up, KeepUsage or a
// quota is refused with ratelimit.ErrNotSupported.
func (l *Limiter) Lease(ctx context.Context, key string, limit ratelimit.Limit, r LeaseRequest) (LeaseGrant, error) {
	if err := l.checkLease(key, limit, r); err != nil {
		return LeaseGrant{}, err
	}
	tag := leaseTag
	if r.Shards > 1 {
		tag = leaseTag + strconv.Itoa(r.Shard) + "/" + strconv.Itoa(r.Shards)
	}
	keys := []string{l.key(key, tag, limit)}
	b := make([]byte, 0, 64)
	b = strconv.AppendUint(b, r.Seq, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(r.Held), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(r.Return), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, max(r.Lease.Microseconds(), 1), 10)
	argv := []any{limit.Rate, limit.Burst, r.Want, r.Instance, string(b)}
	if l.now != nil {
		argv = append(argv, l.clientNow(), l.skew)
	}
	v, err := l.run(ctx, leaseScript.on(l.now != nil), keys, argv, nil)
	if err != nil {
		return LeaseGrant{}, err
	}
	if len(v) < 6 {
		return LeaseGrant{}, fmt.Errorf("distributed: the lease script returned %d values, want 6", len(v))
	}
	return LeaseGrant{
		Tokens:     int(v[0]),
		Remaining:  int(min(max(v[1], 0), int64(limit.Burst))),
		RetryAfter: time.Duration(v[2]) * time.Microsecond,
		ResetAfter: time.Duration(v[3]) * time.Microsecond,
		Replayed:   v[4] == 1,
		Stale:      v[4] == 2,
		At:         instant(v[5]),
	}, nil
}

// errLease is wrapped by Lease's refusals of its request's fields.
var errLease = errors.New("distributed: Lease")

// checkLease checks a Lease call's arguments: those of every call, a token bucket with
// nothing else, and the request's fields.
func (l *Limiter) checkLease(key string, limit ratelimit.Limit, r LeaseRequest) error {
	if err := l.check(key, limit, 1); err != nil {
		return err
	}
	if limit.Algorithm != ratelimit.DefaultAlgorithm && limit.Algorithm != ratelimit.TokenBucket ||
		limit.Warmup != 0 || limit.KeepUsage {
		return fmt.Errorf("%w: a lease of anything but a plain token bucket", ratelimit.ErrNotSupported)
	}
	switch {
	case r.Instance == "" || len(r.Instance) > 64 || strings.ContainsAny(r.Instance, " \t\n"):
		return fmt.Errorf("%w: an instance id must be 1 to 64 bytes without spaces: %w", errLease, args.ErrInvalidRequest)
	case r.Seq == 0 || r.Seq >= 1<<53:
		return fmt.Errorf("%w: Seq out of range: %w", errLease, args.ErrInvalidRequest)
	case r.Shards > 1 && (r.Shard < 0 || r.Shard >= r.Shards):
		return fmt.Errorf("%w: Shard out of range: %w", errLease, args.ErrInvalidRequest)
	case r.Want < 0 || r.Want > limit.Burst || r.Held < 0 || r.Return < 0 || r.Lease <= 0:
		return fmt.Errorf("%w: Want, Held, Return or Lease out of range: %w", errLease, args.ErrInvalidRequest)
	}
	return nil
}
