package slogobserver_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/priority"
	"github.com/sluice-go/ratelimit/slogobserver"
)

// logs is a JSON logger at level Info, without times, and what it wrote, line by line.
type logs struct{ bytes.Buffer }

func (l *logs) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(&l.Buffer, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
}

func (l *logs) lines() []string {
	s := strings.TrimSpace(l.String())
	l.Reset()
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// clock is moved by hand.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

var (
	denied = observe.Decision{
		Policy: "api", Backend: "local", Outcome: observe.OutcomeDenied, Cost: 1,
		Limit: ratelimit.PerSecond(2), Duration: 150 * time.Nanosecond,
	}
	failed = observe.Decision{
		Policy: "api", Backend: "distributed", Outcome: observe.OutcomeError, ErrorKind: observe.KindTimeout,
		Err: errors.New("ratelimit: redis: context deadline exceeded"), Cost: 1, Limit: ratelimit.PerSecond(2),
		Duration: 50 * time.Millisecond,
	}
)

const (
	deniedLine = `{"level":"INFO","msg":"rate limit: request denied","policy":"api","backend":"local","shadow":false,"cost":1,"priority":"critical","limit":"2/s","duration":150,"remaining":0}`
	failedLine = `{"level":"WARN","msg":"rate limit: the limiter could not decide","policy":"api","backend":"distributed","shadow":false,"cost":1,"priority":"critical","limit":"2/s","duration":50000000,"error_type":"timeout","err":"ratelimit: redis: context deadline exceeded"}`
)

// TestRecordLimit: two records of each kind a minute; the ones dropped are counted in the
// next one written.
func TestRecordLimit(t *testing.T) {
	var out logs
	c := &clock{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	o := slogobserver.New(out.logger(), slogobserver.WithRecordLimit(2, time.Minute), slogobserver.WithClock(c.Now))
	ctx := context.Background()

	for range 5 {
		o.ObserveDecision(ctx, denied)
	}
	o.ObserveDecision(ctx, failed) // its own limit
	o.ObserveDecision(ctx, observe.Decision{Policy: "api", Outcome: observe.OutcomeAllowed})
	assert.Equal(t, []string{deniedLine, deniedLine, failedLine}, out.lines())

	c.now = c.now.Add(time.Minute - time.Nanosecond)
	o.ObserveDecision(ctx, denied)
	assert.Empty(t, out.lines(), "still the first minute")

	c.now = c.now.Add(time.Nanosecond)
	o.ObserveDecision(ctx, denied)
	o.ObserveDecision(ctx, denied)
	assert.Equal(t, []string{
		strings.TrimSuffix(deniedLine, "}") + `,"dropped":4}`,
		deniedLine,
	}, out.lines())
}

func TestShadowAndCached(t *testing.T) {
	var out logs
	o := slogobserver.New(out.logger())
	d := denied
	d.Shadow, d.Cached, d.Backend = true, true, "fallback"
	o.ObserveDecision(context.Background(), d)
	assert.Equal(t, []string{
		`{"level":"INFO","msg":"rate limit: request would be denied (shadow)","policy":"api","backend":"fallback","shadow":true,"cost":1,"priority":"critical","limit":"2/s","duration":150,"remaining":0,"cached":true}`,
	}, out.lines())
}

// TestPriority: a record says at which priority the request was decided.
func TestPriority(t *testing.T) {
	var out logs
	o := slogobserver.New(out.logger())
	d := denied
	d.Priority = priority.Sheddable
	o.ObserveDecision(context.Background(), d)
	assert.Equal(t, []string{
		`{"level":"INFO","msg":"rate limit: request denied","policy":"api","backend":"local","shadow":false,"cost":1,"priority":"sheddable","limit":"2/s","duration":150,"remaining":0}`,
	}, out.lines())
}

// TestConcurrency: a concurrency limit's refusals and failures are logged as such, without
// a rate limit's limit and remaining; its permits granted are not logged.
func TestConcurrency(t *testing.T) {
	var out logs
	o := slogobserver.New(out.logger())
	d := observe.Decision{Policy: "exports", Backend: "local", Concurrency: true, Cost: 1, Duration: 150}
	o.ObserveDecision(context.Background(), d) // allowed
	d.Outcome = observe.OutcomeDenied
	o.ObserveDecision(context.Background(), d)
	d.Outcome, d.ErrorKind, d.Err, d.Backend = observe.OutcomeError, observe.KindTimeout, ratelimit.ErrTimeout, "distributed"
	o.ObserveDecision(context.Background(), d)
	assert.Equal(t, []string{
		`{"level":"INFO","msg":"concurrency limit: request refused, no permit free","policy":"exports","backend":"local","shadow":false,"cost":1,"priority":"critical","duration":150}`,
		`{"level":"WARN","msg":"concurrency limit: the limiter could not decide","policy":"exports","backend":"distributed","shadow":false,"cost":1,"priority":"critical","duration":150,"error_type":"timeout","err":"ratelimit: backend did not answer in time"}`,
	}, out.lines())
}

// TestLease: package lease's grants decide no request: a chunk granted or refused is not
// logged (the denials that follow are, as decisions), a call for one that failed is.
func TestLease(t *testing.T) {
	var out logs
	o := slogobserver.New(out.logger())
	d := observe.Decision{Policy: "payments", Backend: "distributed", Lease: true, Cost: 6,
		Limit: ratelimit.PerSecond(2000), Duration: 150}
	o.ObserveDecision(context.Background(), d) // granted
	d.Outcome = observe.OutcomeDenied
	o.ObserveDecision(context.Background(), d)
	d.Outcome, d.ErrorKind, d.Err = observe.OutcomeError, observe.KindTimeout, ratelimit.ErrTimeout
	o.ObserveDecision(context.Background(), d)
	assert.Equal(t, []string{
		`{"level":"WARN","msg":"rate limit: a lease's call for a chunk failed","policy":"payments","backend":"distributed","shadow":false,"cost":6,"priority":"critical","limit":"2000/s","duration":150,"error_type":"timeout","err":"ratelimit: backend did not answer in time"}`,
	}, out.lines())
}

// TestLevels: records below the handler's level are neither written nor counted.
func TestLevels(t *testing.T) {
	var out logs
	o := slogobserver.New(out.logger(),
		slogobserver.WithDeniedLevel(slog.LevelDebug), slogobserver.WithErrorLevel(slog.LevelError),
		slogobserver.WithRecordLimit(1, time.Hour))
	for range 3 {
		o.ObserveDecision(context.Background(), denied)
	}
	o.ObserveDecision(context.Background(), failed)
	assert.Equal(t, []string{strings.Replace(failedLine, `"WARN"`, `"ERROR"`, 1)}, out.lines())
}

// TestBreaker: an outage is two lines, its edges, however many probes it takes: the flips
// between open and half-open are below the default level.
func TestBreaker(t *testing.T) {
	var out logs
	o := slogobserver.New(out.logger(), slogobserver.WithRecordLimit(1, time.Hour))
	down := errors.New("ratelimit: redis: connection refused")
	o.ObserveBreaker(fallback.StateChange{From: fallback.Closed, To: fallback.Open, Err: down})
	for range 50 { // a probe every cooldown, each failing
		o.ObserveBreaker(fallback.StateChange{From: fallback.Open, To: fallback.HalfOpen})
		o.ObserveBreaker(fallback.StateChange{From: fallback.HalfOpen, To: fallback.Open, Err: down})
	}
	o.ObserveBreaker(fallback.StateChange{From: fallback.Open, To: fallback.HalfOpen})
	o.ObserveBreaker(fallback.StateChange{From: fallback.HalfOpen, To: fallback.Closed})
	assert.Equal(t, []string{
		`{"level":"WARN","msg":"rate limit: circuit breaker open, decisions degraded","from":"closed","to":"open","err":"ratelimit: redis: connection refused"}`,
		`{"level":"INFO","msg":"rate limit: circuit breaker closed, recovered","from":"half-open","to":"closed"}`,
	}, out.lines())
}

// TestThroughObserve: the seed timeline's denial, through observe.Wrap on the local
// backend; the key is not in the record.
func TestThroughObserve(t *testing.T) {
	var out logs
	l := local.New(local.WithCleanupInterval(0))
	defer l.Close()
	limiter := observe.Wrap(l, slogobserver.New(out.logger()), "api")
	for range 3 {
		_, err := limiter.Allow(context.Background(), "client-203.0.113.7", ratelimit.Limit{Rate: 1, Burst: 2})
		require.NoError(t, err)
	}
	lines := out.lines()
	require.Len(t, lines, 1)
	assert.Contains(t, lines[0], `"msg":"rate limit: request denied","policy":"api","backend":"local"`)
	assert.NotContains(t, lines[0], "203.0.113.7")
}

// TestDroppedAllocatesNothing: past the limit, a denial costs no allocation.
func TestDroppedAllocatesNothing(t *testing.T) {
	var out logs
	o := slogobserver.New(out.logger(), slogobserver.WithRecordLimit(1, time.Hour))
	ctx := context.Background()
	o.ObserveDecision(ctx, denied)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { o.ObserveDecision(ctx, denied) }))
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		o.ObserveDecision(ctx, observe.Decision{Outcome: observe.OutcomeAllowed})
	}))
}

// TestDefaultLogger: a nil logger means slog.Default().
func TestDefaultLogger(t *testing.T) {
	var out logs
	prev := slog.Default()
	defer slog.SetDefault(prev)
	slog.SetDefault(out.logger())
	slogobserver.New(nil).ObserveDecision(context.Background(), denied)
	assert.Equal(t, []string{deniedLine}, out.lines())
}

// TestSettleAndReserve: a settle made is not logged, one refused is, as an error; a slot
// booked is not, none within the wait is, as a denial.
func TestSettleAndReserve(t *testing.T) {
	var out logs
	o := slogobserver.New(out.logger())
	ctx := context.Background()
	settled := observe.Decision{Policy: "llm", Backend: "local", Settle: true, Cost: 2, Actual: 6, Limit: ratelimit.PerSecond(2), Duration: 150}
	o.ObserveDecision(ctx, settled)
	settled.Outcome, settled.ErrorKind, settled.Err = observe.OutcomeError, observe.KindInvalidInput, ratelimit.ErrExceedsBurst
	o.ObserveDecision(ctx, settled)
	booked := observe.Decision{Policy: "jobs", Backend: "distributed", Reserve: true, Cost: 1, Limit: ratelimit.PerSecond(2), Duration: 150}
	o.ObserveDecision(ctx, booked)
	booked.Outcome = observe.OutcomeDenied
	o.ObserveDecision(ctx, booked)
	assert.Equal(t, []string{
		`{"level":"WARN","msg":"rate limit: a settle was refused or not made","policy":"llm","backend":"local","shadow":false,"cost":2,"priority":"critical","limit":"2/s","duration":150,"error_type":"invalid_input","err":"ratelimit: cost exceeds burst"}`,
		`{"level":"INFO","msg":"rate limit: no slot within the wait","policy":"jobs","backend":"distributed","shadow":false,"cost":1,"priority":"critical","limit":"2/s","duration":150,"remaining":0}`,
	}, out.lines())
}
