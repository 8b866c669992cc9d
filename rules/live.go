package rules

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/nilarg"
	"github.com/sluice-go/ratelimit/internal/settle"
)

// Parser reads a rules file into a Document: ParseJSON, or a YAML reader (package
// rulesyaml, a module of its own).
type Parser func(file string, data []byte) (Document, error)

// Rules is the rule set in force, replaced whole by a reload: requests decided while a
// reload happens finish on the set they started with, and no request waits for a lock. It
// is safe for concurrent use.
type Rules struct {
	reg     Registry
	opts    options
	current atomic.Pointer[Set]

	mu     sync.Mutex         // serializes loads
	loaded settle.Sum         // the content of the set in force
	checks []func(*Set) error // see Require
}

// Option configures Rules.
type Option func(*options)

type options struct {
	parse     Parser
	validator ratelimit.LimitValidator
	onError   func(error)
}

// WithParser sets how a file is read. Default: ParseJSON.
func WithParser(p Parser) Option { return func(o *options) { o.parse = p } }

// WithValidator checks every limit with v at load. The middlewares check every set against
// the limiter they decide it with anyway (see Require): v is for Rules that no middleware
// takes, or for a limiter of your own beside theirs. Default: only
// ratelimit.Limit.Validate's checks, and the middlewares'.
func WithValidator(v ratelimit.LimitValidator) Option { return func(o *options) { o.validator = v } }

// nilArg returns an error naming the option given a nil of some type (a
// (*local.Limiter)(nil)): it is not "none", which is the untyped nil, and would panic on the
// first file or request it met.
func (o *options) nilArg() error {
	if nilarg.Typed(o.validator) {
		return fmt.Errorf("WithValidator: a nil %T", o.validator)
	}
	return nil
}

// WithErrorHandler sets what is told of a reload that failed (Watch's, whose caller cannot
// see the error otherwise); the set in force stays. Default: none.
func WithErrorHandler(f func(error)) Option { return func(o *options) { o.onError = f } }

// New returns Rules whose files may name the key functions of reg, with no set loaded:
// until Load succeeds, a middleware's WithRules limits nothing. New panics on an option
// given a nil of some type, such as WithValidator((*local.Limiter)(nil)).
func New(reg Registry, opts ...Option) *Rules {
	r := &Rules{reg: reg, opts: options{parse: ParseJSON}}
	for _, o := range opts {
		if o != nil {
			o(&r.opts)
		}
	}
	if r.opts.parse == nil {
		r.opts.parse = ParseJSON
	}
	if err := r.opts.nilArg(); err != nil {
		panic("rules: New: " + err.Error())
	}
	return r
}

// Set returns the set in force, nil before the first Load.
func (r *Rules) Set() *Set { return r.current.Load() }

// Require makes check, which returns an error for a set it cannot decide, one of the checks
// every set must pass to come into force: the set in force now, and each set a later Load
// reads. A middleware built on r calls it with a check of its limiter (a limit the backend
// refuses, a concurrency without the middleware's permit limiter), so that such a set is refused at
// load, never at request time. Require returns check's error on the set in force, and then keeps
// nothing.
func (r *Rules) Require(check func(*Set) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if set := r.current.Load(); set != nil {
		if err := check(set); err != nil {
			return err
		}
	}
	r.checks = append(r.checks, check)
	return nil
}

// Load reads data (named file in errors), checks it, and puts it in force. A file that
// fails changes nothing: the set in force stays, and the error, which names file, line and
// rule (the policy, for what a check of Require refuses), is returned.
func (r *Rules) Load(file string, data []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	doc, err := r.opts.parse(file, data)
	if err != nil {
		return err
	}
	set, err := Compile(doc, r.reg, WithValidator(r.opts.validator))
	if err != nil {
		return err
	}
	var errs []error
	for _, check := range r.checks {
		if err := check(set); err != nil {
			errs = append(errs, fmt.Errorf("%w: %s: %w", ErrInvalid, file, err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	r.current.Store(set)
	r.loaded = settle.Of(data)
	return nil
}

// LoadFile is Load of the file at path.
func (r *Rules) LoadFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("rules: %w", err)
	}
	return r.Load(path, data)
}

// Watch reloads the file at path when its content changes, reading it every interval,
// until ctx ends; it returns then. A content takes effect once two reads one interval apart
// give the same bytes, so that a file read while it is written in place is never loaded
// half-written: a change takes effect one to two intervals after it is written. Write the
// new file beside the old and rename it over it (atomic: no read sees a part); written in
// place, a file is safe unless its writer pauses for a whole interval mid-file. A content that
// fails (an unreadable file too) keeps the set in force and is told to the error handler
// (WithErrorHandler) once, however many reads find it.
func (r *Rules) Watch(ctx context.Context, path string, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var state settle.State
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		data, err := os.ReadFile(path)
		sum := settle.Of(data)
		if err != nil {
			err = fmt.Errorf("rules: %w", err)
			sum = settle.Of([]byte(err.Error())) // an error is a content, reported once
		}
		r.mu.Lock()
		loaded := r.loaded
		r.mu.Unlock()
		if !state.Next(sum, loaded) {
			continue
		}
		if err == nil {
			err = r.Load(path, data)
		}
		if err == nil {
			state.Loaded()
			continue
		}
		state.Failed(sum)
		if r.opts.onError != nil {
			r.opts.onError(err)
		}
	}
}
