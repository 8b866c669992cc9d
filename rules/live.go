package rules

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/internal/nilarg"
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

	mu   sync.Mutex // serializes loads
	last []byte     // the text of the set in force
}

// Option configures Rules.
type Option func(*options)

type options struct {
	parse       Parser
	validator   ratelimit.LimitValidator
	onError     func(error)
	concurrency concurrency.Limiter
}

// WithParser sets how a file is read. Default: ParseJSON.
func WithParser(p Parser) Option { return func(o *options) { o.parse = p } }

// WithValidator checks every limit with v, the limiter the rules are decided by, at load:
// a limit the backend would refuse is refused then, never at request time. Default: only
// ratelimit.Limit.Validate's checks.
func WithValidator(v ratelimit.LimitValidator) Option { return func(o *options) { o.validator = v } }

// WithConcurrency gives the permits of the policies' concurrency field: a file with a
// policy of concurrency above 0 is refused at load without it. Default: none.
func WithConcurrency(l concurrency.Limiter) Option { return func(o *options) { o.concurrency = l } }

// nilArg returns an error naming the option given a nil of some type (a
// (*local.Limiter)(nil)): it is not "none", which is the untyped nil, and would panic on the
// first file or request it met.
func (o *options) nilArg() error {
	switch {
	case nilarg.Typed(o.validator):
		return fmt.Errorf("WithValidator: a nil %T", o.validator)
	case nilarg.Typed(o.concurrency):
		return fmt.Errorf("WithConcurrency: a nil %T", o.concurrency)
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

// Concurrency returns the limiter of the policies' permits (WithConcurrency), nil without
// one.
func (r *Rules) Concurrency() concurrency.Limiter { return r.opts.concurrency }

// Load reads data (named file in errors), checks it, and puts it in force. A file that
// fails changes nothing: the set in force stays, and the error, which names file, line and
// rule, is returned.
func (r *Rules) Load(file string, data []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	doc, err := r.opts.parse(file, data)
	if err != nil {
		return err
	}
	set, err := Compile(doc, r.reg, WithValidator(r.opts.validator), WithConcurrency(r.opts.concurrency))
	if err != nil {
		return err
	}
	r.current.Store(set)
	r.last = bytes.Clone(data)
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

// Watch reloads the file at path whenever its content changes, reading it every interval,
// until ctx ends; a reload that fails keeps the set in force and is told to the error
// handler (WithErrorHandler), once per content. It returns when ctx ends.
func (r *Rules) Watch(ctx context.Context, path string, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var failed []byte // the content that failed last, not to report it again
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		data, err := os.ReadFile(path)
		r.mu.Lock()
		same := err == nil && bytes.Equal(data, r.last)
		r.mu.Unlock()
		if same || err == nil && failed != nil && bytes.Equal(data, failed) {
			continue
		}
		if err == nil {
			err = r.Load(path, data)
		} else {
			err = fmt.Errorf("rules: %w", err)
		}
		failed = nil
		if err != nil {
			failed = data
			if r.opts.onError != nil {
				r.opts.onError(err)
			}
		}
	}
}
