package rls

import (
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/headers"
)

// responseHeaders returns the rate-limit fields of a response, of the style the service
// was given, for one descriptor: the last enforced one over its limit, else the one with a
// limit and the fewest remaining (the first of them), as the reference service picks it.
// None when no descriptor has a limit.
func (s *Service) responseHeaders(p *plan, now time.Time) []*core.HeaderValue {
	if s.opts.noHeaders {
		return nil
	}
	b := -1
	for i := range p.items {
		it := &p.items[i]
		if it.rule == nil || it.kind == unlimited {
			continue
		}
		switch {
		case it.over && !it.shadow:
			b = i
		case b >= 0 && p.items[b].over && !p.items[b].shadow:
		case b < 0 || it.left() < p.items[b].left():
			b = i
		}
	}
	if b < 0 {
		return nil
	}
	it := &p.items[b]
	denied := it.over && !it.shadow
	reset := it.reset(now)
	res := ratelimit.Result{Allowed: !denied, Limit: it.limit, Remaining: it.left(), ResetAfter: reset}
	if denied {
		res.RetryAfter = reset
		if it.window == 0 && it.res.RetryAfter > 0 {
			res.RetryAfter = it.res.RetryAfter
		}
	}
	name := it.rule.Name
	if name == "" {
		name = it.rule.Path
	}
	fields := headers.Fields(s.opts.style, name, res)
	out := make([]*core.HeaderValue, len(fields))
	for i, f := range fields {
		out[i] = &core.HeaderValue{Key: f.Name, Value: f.Value}
	}
	return out
}

// left is what the item reports as remaining: 0 when over its limit.
func (it *item) left() int {
	if it.over {
		return 0
	}
	return it.remaining
}
