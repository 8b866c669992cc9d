package main

// observer is the type WithObserver takes, and the package that declares it.
var observer = goType{Name: "observe.Observer", Import: "github.com/sluice-go/ratelimit/observe"}

// docsURL is where the documents of docs/ are read, since a doc comment cannot follow a
// path in the repository.
const docsURL = "https://github.com/sluice-go/ratelimit/blob/main/docs/"

// goType is a type of another package, with that package's import path.
type goType struct{ Name, Import string }

// option is one option shared by the middlewares. Its strings are templates over a
// framework (see frameworks.go), with the functions of funcs; a doc is plain text, in
// paragraphs separated by a blank line, wrapped by the generator.
//
// A function option (fn set) takes f, a function of the framework's request returning
// fn; its set statements read {{.G}}, f turned into a function over the pipeline's request
// type (f itself where the framework's request is that type), nil when f is nil. A value
// option takes params.
type option struct {
	name   string
	doc    string
	fn     string // the result type of f
	fnIn   string // parameters of f after the request's
	fnArgs string // the arguments for them
	params string
	set    string // the statements of the Option
}

// options are the options the three middlewares share, in the order of their files. The
// options of one framework (the denied and error handlers, httpmw.WithRouteFunc, grpcmw's
// WithPerMessage and WithWait) are written by hand in its options.go.
var options = []option{
	{
		name: "WithKeyFunc",
		doc: `WithKeyFunc sets how a {{.Req}}'s key is found{{.KeyFrom}}. Default: {{.KeyDefault}}.
A {{.Req}} whose key cannot be found, or is one the limiter cannot take (empty, or longer
than 512 bytes with its policy's name), is limited under [UnkeyedKey] (see
"Security" in the package documentation). {{cap .Panics}} when [WithLimits] is given too:
its limits carry their keys.`,
		fn:  "(string, error)",
		set: `o.SetKey("WithKeyFunc", {{.G}}, {{.DefaultKey}})`,
	},
	{
		name: "WithLimit",
		doc: `WithLimit sets the limit of every {{.Req}}, under the policy named by
[WithPolicyName]. Default: none: {{.Panics}} unless one of WithLimit, [{{.Table}}],
[WithLimitFunc] and [WithLimits] gives the limits, and when two of them are given,
naming both. l must be a valid limit, accepted by the limiter when it is a
[ratelimit.LimitValidator]: the zero Limit (PerMinute(0), a setting left unset) is
refused too, since it would leave every {{.Req}} unlimited; give [ratelimit.Unlimited]
or exempt {{.Reqs}} with [WithSkipFunc] instead.`,
		params: "l ratelimit.Limit",
		set:    "o.SetLimit(l)",
	},
	{
		name: "{{.Table}}",
		doc: `{{.TableIntro}} Each {{.Route}} is a policy of its own, named by its {{.RouteName}}
in {{.RouteNamedIn}}, the metrics and its buckets: two {{.Routes}} never share a bucket,
whatever their limits. def's {{.Reqs}} are under the policy named by [WithPolicyName]. An
entry of the zero Limit is refused, as by [WithLimit], and one of [ratelimit.Unlimited]
exempts its {{.Route}}; def may be either, which leaves the other {{.Routes}} unlimited. The map is copied. See [WithLimit] for the
default.
{{- if .TableMore}}

{{.TableMore}}
{{- end}}`,
		params: "limits map[string]ratelimit.Limit, def ratelimit.Limit",
		set: `{{if .TableExtra}}{{.TableExtra}}
{{end}}o.SetTable("{{.Table}}", limits, def, {{.TableName}})`,
	},
	{
		name: "WithLimits",
		doc: `WithLimits gives each {{.Req}} several limits, decided all or nothing: f returns
them, each with its key, limit, cost and name ("5 a minute and 20 an hour per client").
Every bucket is charged or none is; {{.BindingShown}}. Each limit is a policy named by its
Name, or by [WithPolicyName] when it has none. Each {{.Req}}'s keys and costs come with
its limits: {{.Panics}} when [WithKeyFunc], [WithCostFunc] or another limit option is
given too, and when the limiter does not implement [ratelimit.MultiLimiter]. A nil f is
ignored. See {{doc "limits.md"}}.`,
		fn:  "[]ratelimit.Request",
		set: "o.SetLimits({{.G}})",
	},
	{
		name: "WithRules",
		doc: `WithRules gives each {{.Req}} its policy from the rules in force in rs (a rules file,
kept current by rs.Load and rs.Watch): the policy of the first rule that matches, or the
file's default, gives its limits (decided all or nothing), its key (for a policy that
names none, [WithKeyFunc]'s default), its cost, and what it says of priority, shadow mode
and concurrency (permits of [WithConcurrency]'s limiter). A {{.Req}} is decided under one
set from start to end, whatever reloads happen
meanwhile; a {{.Req}} no policy applies to, or that comes before the first load, is not
limited. {{.RulesRoute}}

Beside it: {{cap .Panics}} when [WithLimit], [{{.Table}}], [WithLimitFunc], [WithLimits],
[WithKeyFunc] or [WithCostFunc] is given too, or when the limiter does
not implement [ratelimit.MultiLimiter]; a policy's priority wins over [WithPriorityFunc],
which gives the priority of the policies that name none; [WithShadow] makes every policy
shadow (and holds no permit); [WithSkipFunc], [WithRefundIf], [WithObserver],
[WithFailClosed] and [WithHeaderStyle] work as with limits given in Go, and the requests
of a shadow policy get no rate-limit {{.Headers}} unless WithHeaderStyle asks. See
{{doc "rules.md"}}.`,
		params: "rs *rules.Rules",
		set:    "o.SetRules(rs, {{.RulesRequest}})",
	},
	{
		name: "WithRefundIf",
		doc: `WithRefundIf gives a {{.Req}}'s tokens back after {{.RefundWhen}}, when f says
so: {{.RefundExample}}. The tokens go back to the buckets the decision charged them to,
as many as it took ([ratelimit.Result].Charge), or nowhere; a shadow decision's go back
to its shadow buckets ([WithShadow]). {{.RefundMore}} It needs a limiter that implements
[ratelimit.Inspector] ({{.Panics}} otherwise). Default: no refunds. See
{{doc "limits.md#refunds"}}.`,
		fn:     "bool",
		fnIn:   "{{.RefundIn}}",
		fnArgs: "{{.RefundArgs}}",
		set:    "o.Refund = {{.G}}",
	},
	{
		name: "WithSettle",
		doc: `WithSettle settles a {{.Req}}'s cost after {{.RefundWhen}}, for a cost known only
then (an LLM call's tokens, a response's bytes): the {{.Req}} is decided for its estimate
(its cost, [WithCostFunc]), and f returns what it really cost, actual, with ok true; each
bucket the decision charged is then settled from the estimate to actual
([ratelimit.Settler]): an underrun given back, an overrun charged, into debt if need be,
which later {{.Req}}s wait out (a denial's Retry-After counts it). ok false settles
nothing. A {{.Req}} refunded by [WithRefundIf] is not settled. Errors go to the error
handler. It needs a limiter that implements [ratelimit.Settler] ({{.Panics}} otherwise).
Under one limit the estimate is decided with the Settler's Hold: on Redis it is held as a reservation in flight, counted by every other {{.Req}}, until the
settle (ok false then keeps the estimate charged), or for 5 minutes when none comes (a
crash, a panic). Default: no settling. See {{doc "limits.md#settle"}}.`,
		fn:     "(actual int, ok bool)",
		fnIn:   "{{.RefundIn}}",
		fnArgs: "{{.RefundArgs}}",
		set:    "o.Settle = {{.G}}",
	},
	{
		name: "WithLimitFunc",
		doc: `WithLimitFunc sets a function that returns each {{.Req}}'s limit, for limits that
depend on the {{.User}}'s plan and the like, under the policy named by [WithPolicyName];
[ratelimit.Unlimited] leaves a {{.Req}} unlimited. So does the zero Limit, but as what a
setting never set gives (PerSecond(0)) it is reported, the first time only, to the error
handler. See [WithLimit] for the default. A nil f is ignored.`,
		fn:  "ratelimit.Limit",
		set: "o.SetLimitFunc({{.G}})",
	},
	{
		name: "WithCostFunc",
		doc: `WithCostFunc sets how many tokens a {{.CostOf}} takes, for {{.Reqs}} that cost more
than others (a batch of n items). Default: 1. {{.CostMore}} {{cap .Panics}} when [WithLimits]
is given too: its limits carry their costs. What a cost below 1, or above the limit's
Burst, is answered: see {{doc "middleware.md#answers"}}.`,
		fn:  "int",
		set: `o.SetCost("WithCostFunc", {{.G}})`,
	},
	{
		name: "WithSkipFunc",
		doc: `WithSkipFunc sets a function that exempts {{.Reqs}} from limiting: when it returns
true the limiter is not asked and no rate-limit {{.Header}} is sent. Default: nothing is
skipped. {{.SkipMore}}`,
		fn:  "bool",
		set: "o.Skip = {{.G}}",
	},
	{
		name: "WithPriorityFunc",
		doc: `WithPriorityFunc sets a function that gives each {{.Req}} its priority
([priority.Level]): a {{.Req}} of a lower priority is admitted only while its bucket
keeps a reserve for the higher ones (the limiter's reserves: local.WithReserves,
distributed.WithReserves), so that a flood of sheddable {{.Reqs}} ({{.Sheddable}}) cannot
take the tokens of critical ones ({{.Critical}}). The priority goes in the context the
limiter is asked with ([priority.With]) and to the observer ([WithObserver]).
Default: the priority the {{.Req}}'s context carries, [priority.Critical] unless code
before {{.Mw}} set one{{.PriorityMore}}. A nil f means the default. See
{{doc "algorithms.md#priority-reserves"}}.`,
		fn:  "priority.Level",
		set: "o.Priority = {{.G}}",
	},
	{
		name: "WithConcurrency",
		doc: `WithConcurrency holds each {{.Req}} that the rate limit lets through to at most max
of its key running at once, with permits of l (concurrency/local in this process,
concurrency/distributed across the fleet): the {{.Req}} waits for a permit as l's queue
allows, within its context, and releases it when the handler returns. A {{.Req}} that
finds no permit and no room to wait {{.Busy}}, and keeps the tokens the rate limit took.
The key is the one [WithKeyFunc] finds, under the {{.Req}}'s policy; a {{.Req}} denied by
the rate limit takes no permit. Under [WithRules], l gives the permits of the policies'
concurrency, and max is that of the policies that name none. [WithFailClosed] covers l's failures as the rate limiter's: failing
open, a {{.Req}} proceeds without a permit (concurrency/distributed does not fail by
default: it degrades to this instance's share of max). Without a rate limit option only
concurrency is limited, and the rate limiter given may be nil. {{cap .Panics}} when l is
nil, when max is below 1, and beside [WithLimits] or [WithShadow]. Default: no concurrency limit. See
{{doc "concurrency.md"}}.`,
		params: "l concurrency.Limiter, max int",
		set:    "o.SetConcurrency(l, max, nil)",
	},
	{
		name: "WithConcurrencyFunc",
		doc: `WithConcurrencyFunc is [WithConcurrency] with a maximum per {{.Req}}, f's (per
{{.Route}}, per plan); 0 leaves a {{.Req}} unlimited in concurrency. A nil f is ignored.`,
		params: "l concurrency.Limiter",
		fn:     "int",
		set: `if {{.G}} != nil {
o.SetConcurrency(l, 0, {{.G}})
}`,
	},
	{
		name: "WithFailClosed",
		doc: `WithFailClosed makes {{.Mw}} refuse a {{.Req}} when the limiter fails (Redis
unreachable, limiter closed): it {{.FailClosed}}. Choose it for limits that must hold, such
as on a login: whoever can make the limiter fail otherwise escapes the limit. Default: fail
open, the {{.Req}} proceeds and the observer is told. Either way, a {{.Req}} the limiter
cannot decide because of its arguments (a cost below 1, a limit the backend rejects) is
refused, and one whose own context has ended is ended: see {{doc "middleware.md#answers"}}.`,
		set: "o.FailClosed = true",
	},
	{
		name: "WithHeaderStyle",
		doc: `WithHeaderStyle sets which rate-limit {{.StyleWhat}}; [headers.StyleNone] sends
none. Default: [headers.StyleXRateLimit], or StyleNone with [WithShadow]. {{.StyleMore}}`,
		params: "s headers.Style",
		set:    "o.SetStyle(s)",
	},
	{
		name: "WithPolicyName",
		doc: `WithPolicyName names the policy of [WithLimit] and [WithLimitFunc], of the
{{.Reqs}} a table's def applies to ([{{.Table}}]), and of the limits of [WithLimits] that
have no name. A policy's name is in {{.PolicyShown}}, in the observer's reports and in
its buckets' keys: two {{.Mws}} over one limiter share a bucket only under the same
policy name. A name with a '|' is refused ({{.Panics}}). Default, and for "":
[headers.DefaultPolicyName], "default".`,
		params: "name string",
		set: `if name == "" {
name = headers.DefaultPolicyName
}
o.PolicyName = name`,
	},
	{
		name: "WithObserver",
		doc: `WithObserver reports every decision to obs ([{{observer}}]; packages otelmetrics,
prommetrics and slogobserver have ready ones), under the name of its policy (see
[WithPolicyName]), never the key; a decision over several limits ([WithLimits]) is
reported once per limit. Default: none. See {{doc "observability.md"}}.`,
		params: "obs {{observer}}",
		set:    "o.Observer = obs",
	},
	{
		name: "WithShadow",
		doc: `WithShadow makes {{.Mw}} decide and report every {{.Req}}, but let every one
proceed ({{.ShadowAnswered}}), in buckets apart from the enforced ones: a safe rollout of
a new limit. A shadow decision waits for the limiter at most {{shadowBudget}}, and after
the limiter fails (a timeout, an unavailable backend), shadow decisions pause for
{{shadowPause}}: a shadow limit never slows the real traffic by more. Default: off. See
{{doc "middleware.md"}}.`,
		set: "o.Shadow = true",
	},
}
