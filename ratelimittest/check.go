package ratelimittest

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// Check runs the rules Run runs and returns their failures, joined, each prefixed with its
// rule's path ("TokenBucket/WorkedExample: ..."), instead of failing t: for a test that a limiter
// breaks the contract, such as this package's own test of a wrong backend. t is used for
// what the rules need of a test besides failing (testing/synctest bubbles, logs, temporary
// directories); a rule's cleanups run when the rule ends.
//
// Run and Check are two entry points rather than one Run over a small interface because the
// rules need subtests and bubbles, which only *testing.T provides; Check gives up subtests
// and keeps the rest, as testing/fstest.TestFS returns an error.
func Check(t *testing.T, h Harness) error {
	t.Helper()
	c := &checkRunner{t: t}
	walk(c, h)
	return errors.Join(c.errs...)
}

type checkRunner struct {
	t    *testing.T
	path []string
	errs []error
}

func (c *checkRunner) group(name string, f func(runner)) {
	if name == "" {
		f(c)
		return
	}
	c.path = append(c.path, name)
	defer func() { c.path = c.path[:len(c.path)-1] }()
	f(c)
}

func (c *checkRunner) setup(f func(testing.TB)) bool {
	return c.record("setup", c.t, f)
}

func (c *checkRunner) rule(name string, bubble bool, f func(testing.TB)) {
	if !bubble {
		c.record(name, c.t, f)
		return
	}
	// The bubble's test is never failed: the recorder is.
	inBubble(c.t, func(t *testing.T) { c.record(name, t, f) })
}

// record runs f on a recorder under t, and keeps its failure; it says whether f passed.
func (c *checkRunner) record(name string, t *testing.T, f func(testing.TB)) bool {
	r := &recorder{TB: t, name: strings.Join(append(c.path, name), "/")}
	r.run(f)
	if len(r.failures) == 0 {
		return true
	}
	c.errs = append(c.errs, fmt.Errorf("%s: %s", r.name, strings.Join(r.failures, "; ")))
	return false
}

// recorder is a testing.TB that records failures instead of reporting them. Everything
// else goes to the test it wraps.
type recorder struct {
	testing.TB
	name string

	mu       sync.Mutex
	failures []string
	cleanups []func()
	skipped  bool
}

// run runs f, then the cleanups f registered, last first, each in a goroutine of its own so
// that FailNow (runtime.Goexit) ends only the function that called it.
func (r *recorder) run(f func(testing.TB)) {
	inGoroutine(func() { f(r) })
	for {
		r.mu.Lock()
		if len(r.cleanups) == 0 {
			r.mu.Unlock()
			return
		}
		last := r.cleanups[len(r.cleanups)-1]
		r.cleanups = r.cleanups[:len(r.cleanups)-1]
		r.mu.Unlock()
		inGoroutine(last)
	}
}

func inGoroutine(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
}

func (r *recorder) Name() string { return r.name }
func (r *recorder) Helper()      {}

func (r *recorder) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

func (r *recorder) fail(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, strings.TrimSpace(msg))
}

func (r *recorder) Fail() { r.fail("failed") }

func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.failures) > 0
}

func (r *recorder) FailNow() {
	if !r.Failed() {
		r.Fail()
	}
	runtime.Goexit()
}

func (r *recorder) Error(args ...any)                 { r.fail(fmt.Sprintln(args...)) }
func (r *recorder) Errorf(format string, args ...any) { r.fail(fmt.Sprintf(format, args...)) }
func (r *recorder) Fatal(args ...any)                 { r.Error(args...); runtime.Goexit() }
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...); runtime.Goexit() }

func (r *recorder) SkipNow() {
	r.mu.Lock()
	r.skipped = true
	r.mu.Unlock()
	runtime.Goexit()
}
func (r *recorder) Skip(args ...any)                 { r.Log(args...); r.SkipNow() }
func (r *recorder) Skipf(format string, args ...any) { r.Logf(format, args...); r.SkipNow() }

func (r *recorder) Skipped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.skipped
}
