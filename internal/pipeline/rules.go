package pipeline

import (
	"errors"
	"fmt"
	"weak"

	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/rules"
)

// requireRules makes every set of the rules (WithRules) pass p's checks to come into force:
// the set in force now, whose failure is New's, and each one a later load reads (see
// rules.Rules.Require). The check holds p weakly, so that the rules do not keep alive a
// middleware that is gone; its check then passes every set.
func (p *Pipeline[R]) requireRules(rs *rules.Rules) error {
	w := weak.Make(p)
	return rs.Require(func(s *rules.Set) error {
		if p := w.Value(); p != nil {
			return p.checkRules(s)
		}
		return nil
	})
}

// checkRules returns an error for each policy of s that p could not decide: a limit its
// limiter refuses (ratelimit.LimitValidator), a concurrency without a concurrency limiter.
func (p *Pipeline[R]) checkRules(s *rules.Set) error {
	var errs []error
	for _, name := range s.Policies() {
		pol, _ := s.Policy(name)
		for _, l := range pol.Limits {
			err := l.Validate()
			if err == nil && p.validator != nil {
				err = p.validator.ValidateLimit(l)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%spolicy %q: limit %v: %w", p.prefix, name, l, err))
			}
		}
		if pol.Concurrency > 0 && p.permits() == nil {
			errs = append(errs, fmt.Errorf("%spolicy %q: concurrency %d needs a concurrency limiter", p.prefix, name, pol.Concurrency))
		}
	}
	return errors.Join(errs...)
}

// permits returns the limiter of the permits requests take (WithConcurrency, or the rules'
// for their policies), nil for none.
func (p *Pipeline[R]) permits() concurrency.Limiter {
	switch {
	case p.opts.Concurrency != nil:
		return p.opts.Concurrency
	case p.opts.Rules != nil:
		return p.opts.Rules.Concurrency()
	}
	return nil
}
