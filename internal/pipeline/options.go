package pipeline

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/headers"
	"github.com/sluice-go/ratelimit/internal/nilarg"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/priority"
	"github.com/sluice-go/ratelimit/rules"
)

// Options are the settings every middleware shares, over its request type R. Each
// middleware embeds them in its own options and sets them from its With functions, which
// carry the documentation users read.
type Options[R any] struct {
	Key func(R) (string, error)
	// KeyParts, when set, gives the middleware's default key of a request in two parts,
	// key = prefix + value, without allocating, or ok false when it cannot; prepare then
	// builds the bucket key with one allocation instead of two (see bucketOfParts). It is
	// used only while Key is the default (WithKeyFunc not given), and must agree with it.
	KeyParts func(R) (prefix, value string, ok bool)
	// Limit gives a request its limit, and the name of the policy it belongs to: a route
	// pattern or a full method for a table's entry, "" for PolicyName.
	Limit func(R) (ratelimit.Limit, string)
	// Limits gives each request several limits, decided all or nothing (AllowAll); it
	// replaces Key and Limit.
	Limits func(R) []ratelimit.Request
	// Refund, when set, runs after the handler (by the middleware) and says whether to give
	// the request's tokens back.
	Refund func(R) bool
	// Settle, when set, runs after the handler (by the middleware) and gives the request's
	// actual cost, to settle its charge to (see settle.go).
	Settle func(R) (int, bool)
	Cost   func(R) int  // nil: every request costs 1
	Skip   func(R) bool // nil: nothing is skipped
	// Priority gives each request its priority, put in the context the limiter is asked
	// with (priority.With); nil: the priority the request's context carries.
	Priority func(R) priority.Level
	// FailClosed refuses a request the limiter failed to decide; false lets it proceed.
	FailClosed bool
	Style      headers.Style
	PolicyName string
	// Observer is told of every decision the limiter makes; nil: none.
	Observer observe.Observer
	// Shadow decides and reports every request, and lets every one proceed.
	Shadow bool
	// Concurrency, when set, holds each request that the rate limit lets through to at
	// most InFlight(r) running at once per key (0: not limited), with a permit released
	// after the handler (see Pipeline.Acquire).
	Concurrency concurrency.Limiter
	InFlight    func(R) int
	// Rules, when set, gives each request its policy from the set in force (WithRules):
	// limits, key, cost, priority, shadow and concurrency, all from one set; RulesRequest
	// reads a request as rules do.
	Rules        *rules.Rules
	RulesRequest func(R) rules.Request
	// Wait says that requests are admitted by Pipeline.Wait (a gRPC client's WithWait): one
	// limit of one token, enforced, which New refuses beside Cost, Limits, Rules or Shadow.
	Wait bool

	// styleSet records that the header style was chosen, which shadow mode respects.
	styleSet bool

	// limitBy names the option that gave the limits (WithLimit, WithLimits, ...), and
	// conflict is the error New reports when a second one was given too. keyBy and costBy
	// name the key and cost options when given, which WithLimits refuses beside it.
	limitBy, keyBy, costBy string
	conflict               error

	// fixed are the limits known before any request (WithLimit, a table of limits), with
	// the option that gave each, checked by New.
	fixed []fixedLimit
	// zeroFromFunc says that Limit is WithLimitFunc's function, whose zero Limit is
	// reported once (see reportZero): a setting never set, or ratelimit.Unlimited meant.
	zeroFromFunc bool
}

type fixedLimit struct {
	option string
	name   string // the policy's name, "" for PolicyName
	limit  ratelimit.Limit
	// zeroOK says that the zero Limit is a choice here (a table's default: "the requests
	// it applies to are not limited"), not a number missing from the configuration.
	zeroOK bool
}

// Defaults returns the options every middleware starts from, with key as its default key.
func Defaults[R any](key func(R) (string, error)) Options[R] {
	return Options[R]{
		Key:        key,
		Style:      headers.StyleXRateLimit,
		PolicyName: headers.DefaultPolicyName,
	}
}

// SetStyle sets the header style.
func (o *Options[R]) SetStyle(s headers.Style) {
	o.Style, o.styleSet = s, true
}

// setLimitBy records that option gives the limits, and a conflict when another did before.
func (o *Options[R]) setLimitBy(option string) {
	if o.limitBy != "" && o.limitBy != option && o.conflict == nil {
		o.conflict = fmt.Errorf("%s and %s both give the limits: pass one of them", o.limitBy, option)
	}
	o.limitBy = option
}

// SetConcurrency holds each request to at most max(r) of its key in flight at once, with
// permits of l; max nil means a constant maximum, n.
func (o *Options[R]) SetConcurrency(l concurrency.Limiter, n int, max func(R) int) {
	if nilarg.Is(l) && o.conflict == nil {
		o.conflict = errors.New("WithConcurrency: nil concurrency.Limiter")
	}
	o.Concurrency, o.InFlight = l, max
	if max == nil {
		o.InFlight = func(R) int { return n }
		if n < 1 && o.conflict == nil {
			o.conflict = fmt.Errorf("WithConcurrency: max %d is less than 1", n)
		}
	}
}

// SetKey sets the key function, from the option named option (WithKeyFunc); nil keeps
// def, the default.
func (o *Options[R]) SetKey(option string, f, def func(R) (string, error)) {
	if f == nil {
		o.Key, o.keyBy = def, ""
		return
	}
	o.Key, o.keyBy = f, option
}

// SetCost sets the cost function, from the option named option (WithCostFunc); nil means
// the default, a cost of 1.
func (o *Options[R]) SetCost(option string, f func(R) int) {
	o.Cost, o.costBy = f, ""
	if f != nil {
		o.costBy = option
	}
}

// SetLimit gives every request the limit l.
func (o *Options[R]) SetLimit(l ratelimit.Limit) {
	o.setLimitBy("WithLimit")
	o.fixed = []fixedLimit{{fmt.Sprintf("WithLimit(%v)", l), "", l, false}}
	o.Limit = func(R) (ratelimit.Limit, string) { return l, "" }
	o.Limits, o.zeroFromFunc = nil, false
}

// SetLimits gives each request the limits f returns; nil is ignored.
func (o *Options[R]) SetLimits(f func(R) []ratelimit.Request) {
	if f != nil {
		o.setLimitBy("WithLimits")
		o.fixed, o.Limit, o.Limits = nil, nil, f
	}
}

// SetRules gives each request the policy of the rules in force in rs, read by view.
func (o *Options[R]) SetRules(rs *rules.Rules, view func(R) rules.Request) {
	o.setLimitBy("WithRules")
	if rs == nil && o.conflict == nil {
		o.conflict = errors.New("WithRules: nil *rules.Rules")
	}
	o.fixed, o.Limit, o.Limits = nil, nil, nil
	o.Rules, o.RulesRequest = rs, view
}

// SetLimitFunc gives each request the limit f returns; nil is ignored.
func (o *Options[R]) SetLimitFunc(f func(R) ratelimit.Limit) {
	if f != nil {
		o.setLimitBy("WithLimitFunc")
		o.fixed, o.Limits, o.zeroFromFunc = nil, nil, true
		o.Limit = func(r R) (ratelimit.Limit, string) { return f(r), "" }
	}
}

// SetTable gives each request the limit of its name in limits, under a policy of that
// name, or def, under the policy of PolicyName, when the name is not there. name says what the
// request's name is; option names the option for errors. The map is copied.
func (o *Options[R]) SetTable(option string, limits map[string]ratelimit.Limit, def ratelimit.Limit, name func(R) string) {
	o.setLimitBy(option)
	limits = maps.Clone(limits)
	o.fixed = o.fixed[:0:0]
	for _, n := range slices.Sorted(maps.Keys(limits)) {
		o.fixed = append(o.fixed, fixedLimit{fmt.Sprintf("%s: %s: %v", option, n, limits[n]), n, limits[n], false})
	}
	o.fixed = append(o.fixed, fixedLimit{fmt.Sprintf("%s: default %v", option, def), "", def, true})
	o.Limits, o.zeroFromFunc = nil, false
	o.Limit = func(r R) (ratelimit.Limit, string) {
		n := name(r)
		if l, ok := limits[n]; ok {
			return l, n
		}
		return def, ""
	}
}

// ErrZeroLimit is check's error for a fixed limit that is the zero Limit where a limit is
// expected: a number missing from the configuration (PerMinute(0), an unset setting), which
// would otherwise leave every request unlimited without a word.
var ErrZeroLimit = errors.New("the zero Limit (no limit at all): a fixed limit must be a valid limit; give ratelimit.Unlimited, or exempt requests with WithSkipFunc, instead")

// ErrZeroFromFunc is the error reported, once, when WithLimitFunc's function returns the
// zero Limit: the request is not limited, which is what the function meant only if it
// returns ratelimit.Unlimited.
var ErrZeroFromFunc = errors.New("WithLimitFunc returned the zero Limit (a setting never set, such as PerSecond(0)): requests given it are not limited; return ratelimit.Unlimited if that is meant (reported once)")

// conflicts returns an error naming two options that cannot be given together, or nil.
func (o *Options[R]) conflicts() error {
	if o.conflict != nil {
		return o.conflict
	}
	if err := checkName(o.PolicyName); err != nil {
		return fmt.Errorf("WithPolicyName: %w", err)
	}
	for _, f := range o.fixed {
		if err := checkName(f.name); err != nil {
			return fmt.Errorf("%s: %w", f.option, err)
		}
	}
	if o.Concurrency != nil && o.Shadow {
		return errors.New("WithConcurrency and WithShadow: shadow mode decides rate limits only, and a permit is held for real; pass one of them")
	}
	if o.Concurrency != nil && o.Limits != nil {
		return errors.New("WithConcurrency and WithLimits: a request's permit needs one key, and WithLimits gives several; pass one of them")
	}
	if o.Limits != nil {
		for _, by := range [...]string{o.keyBy, o.costBy} {
			if by != "" {
				return fmt.Errorf("%s and WithLimits: WithLimits gives each request its keys and costs; pass one of them", by)
			}
		}
	}
	if o.Wait {
		switch {
		case o.Cost != nil:
			return errors.New("WithWait and WithCostFunc cannot be combined: Limiter.Wait takes one token")
		case o.Rules != nil:
			return errors.New("WithWait and WithRules cannot be combined: Limiter.Wait takes one limit, and a policy may have several")
		case o.Limits != nil:
			return errors.New("WithWait and WithLimits cannot be combined: Limiter.Wait takes one limit")
		case o.Shadow:
			return errors.New("WithWait and WithShadow cannot be combined: shadow mode lets every call through at once")
		}
	}
	if o.Rules != nil {
		for _, by := range [...]string{o.keyBy, o.costBy} {
			if by != "" {
				return fmt.Errorf("%s and WithRules: the rules give each request its key and cost; pass one of them", by)
			}
		}
	}
	return nil
}

// check returns an error for the first fixed limit that is not accepted by v, the
// limiter's validator (nil for none), or is zero where zero is not a choice.
func (o *Options[R]) check(v ratelimit.LimitValidator) error {
	for _, f := range o.fixed {
		if f.limit == ratelimit.Unlimited {
			continue // a choice, said so
		}
		if f.limit == (ratelimit.Limit{}) {
			if f.zeroOK {
				continue
			}
			return fmt.Errorf("%s: %w", f.option, ErrZeroLimit)
		}
		err := f.limit.Validate()
		if err == nil && v != nil {
			err = v.ValidateLimit(f.limit)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", f.option, err)
		}
	}
	return nil
}
