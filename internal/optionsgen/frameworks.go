package main

// framework is what the options' templates need of one middleware package: its Go
// expressions and the words its documentation uses. Every field is filled for every
// framework (an empty string where a framework has nothing to add), so that a template
// reads the same for the three.
type framework struct {
	Pkg     string   // the package, and the argument of its //go:generate line
	Imports []string // what the generated file imports besides the shared ones

	// R is the pipeline's request type (pipeline.Options[R]), V names an R in the
	// generated code, In is the parameter list of the user's functions, and Args the
	// arguments that call them from V. Identity says that the user's functions are over R
	// itself, so they are used as they are.
	R, V, In, Args string
	Identity       bool
	// RefundIn and RefundArgs are the parameters WithRefundIf's function takes after In,
	// and the arguments for them.
	RefundIn, RefundArgs string

	DefaultKey string // the key function WithKeyFunc(nil) restores
	Table      string // the option of a limit table: WithRouteLimits, WithMethodLimits
	TableName  string // the function that gives a request's name in the table
	TableExtra string // a statement the table option runs before SetTable, or ""
	// RulesRequest is the function that reads a request for WithRules (rules.Request), and
	// RulesRoute says what its route is.
	RulesRequest, RulesRoute string

	// Words.
	Req, Reqs    string // "request", "requests"
	Panics       string // who panics at construction: "New panics"
	Mw           string // the subject that decides: "the middleware"
	Mws          string // several of them: "middlewares"
	User         string // whose plan a limit may depend on
	Header       string // the rate-limit fields, singular: "header"
	Headers      string // plural: "headers"
	BindingShown string // how a decision over several limits is shown
	PolicyShown  string // where a policy's name is shown to clients

	// Sentences and phrases of one framework only.
	KeyFrom        string // after "WithKeyFunc sets how a request's key is found"
	KeyDefault     string
	TableIntro     string // the first sentence of the table option
	TableMore      string // a paragraph after the shared ones, or ""
	Route, Routes  string // an entry of the table: "route", "routes"
	RouteName      string // what names an entry's policy: "pattern"
	RouteNamedIn   string // where that name is shown: "the headers"
	RefundWhen     string // "the handler ran"
	RefundExample  string
	RefundMore     string // sentences after the shared ones, or ""
	CostOf         string // what a cost is the cost of
	CostMore       string // a sentence after the default, or ""
	SkipMore       string // a sentence after the default, or ""
	Sheddable      string // an example of sheddable requests
	Critical       string // examples of critical ones
	PriorityMore   string // after "unless code before the middleware set one"
	FailClosed     string // what WithFailClosed does to a request
	Busy           string // what WithConcurrency answers a request that finds no permit
	StyleWhat      string // after "WithHeaderStyle sets which rate-limit"
	StyleMore      string // sentences after the default
	ShadowAnswered string // what a shadow decision leaves of the answer
}

// frameworks are the three middlewares, by package.
var frameworks = map[string]*framework{
	"ginmw": {
		Pkg: "ginmw",
		Imports: []string{
			"github.com/gin-gonic/gin",
			"github.com/sluice-go/ratelimit/keyfuncs",
			"github.com/sluice-go/ratelimit/rules",
		},
		R: "*gin.Context", V: "c", In: "c *gin.Context", Args: "c", Identity: true,
		DefaultKey:   "keyfuncs.ClientIP()",
		Table:        "WithRouteLimits",
		TableName:    "(*gin.Context).FullPath",
		RulesRequest: "func(c *gin.Context) rules.Request { return rules.FromHTTP(c.Request, c.FullPath()) }",
		RulesRoute:   "A request's route is Gin's FullPath (\"/v1/items/:id\").",

		Req: "request", Reqs: "requests", Panics: "New panics", Mw: "the middleware",
		Mws: "middlewares", User: "user", Header: "header", Headers: "headers",
		BindingShown: "headers report the binding limit, and RateLimit-Policy lists every limit by name",
		PolicyShown:  "the IETF RateLimit-Policy and RateLimit headers",

		KeyDefault: "[keyfuncs.ClientIP](), the socket peer's address; behind a proxy, pass " +
			"keyfuncs.ClientIP(keyfuncs.WithTrustedProxies(...))",
		TableIntro: "WithRouteLimits sets a limit per route: limits maps route patterns, as Gin's " +
			"FullPath gives them (\"/v1/items/:id\"), to their limits, and other routes (and " +
			"requests that match no route) get def.",
		Route: "route", Routes: "routes", RouteName: "pattern", RouteNamedIn: "the headers",
		RefundWhen:    "the handler ran",
		RefundExample: "count only failed logins (" + keep("c.Writer.Status() == 401") + "), only server errors",
		CostOf:        "request",
		Sheddable:     keep(`c.FullPath() == "/stats"`),
		Critical:      `"/login", "/pay"`,
		FailClosed:    "answers 503",
		Busy:          "is answered 503 with Retry-After: 1",
		StyleWhat:     "headers responses carry (see package [headers])",
		StyleMore:     "Denials carry Retry-After whatever the style.",
		ShadowAnswered: "no denial, no Retry-After, headers only when [WithHeaderStyle] " +
			"asks",
	},
	"httpmw": {
		Pkg: "httpmw",
		Imports: []string{
			"net/http",
			"github.com/sluice-go/ratelimit/keyfuncs/httpkeys",
			"github.com/sluice-go/ratelimit/rules",
		},
		R: "exchange", V: "x", In: "r *http.Request", Args: "x.r",
		RefundIn: "status int", RefundArgs: "x.status",
		DefaultKey:   "keyOf(httpkeys.ClientIP())",
		Table:        "WithRouteLimits",
		TableName:    "func(x exchange) string { return x.pattern }",
		TableExtra:   "o.routes = true",
		RulesRequest: "func(x exchange) rules.Request { return rules.FromHTTP(x.r, x.pattern) }",
		RulesRoute: "A request's route is its pattern, found as [WithRouteLimits] finds it (" +
			keep(`"POST /login"`) + ").",

		Req: "request", Reqs: "requests", Panics: "New panics", Mw: "the middleware",
		Mws: "middlewares", User: "user", Header: "header", Headers: "headers",
		BindingShown: "headers report the binding limit, and RateLimit-Policy lists every limit by name",
		PolicyShown:  "the IETF RateLimit-Policy and RateLimit headers",

		KeyDefault: "[httpkeys.ClientIP](), the socket peer's address; behind a proxy, pass " +
			"httpkeys.ClientIP(httpkeys.WithTrustedProxies(...))",
		TableIntro: "WithRouteLimits sets a limit per route: limits maps route patterns " +
			"(" + keep(`"GET /v1/items/{id}", "POST /login"`) + ") to their limits, and other requests get def.",
		TableMore: "A request's pattern is the one http.ServeMux routed it by (Request.Pattern), " +
			"when the middleware wraps the handlers the mux routes to; the one the mux will route " +
			"it by, when the middleware wraps the *http.ServeMux itself; or what [WithRouteFunc] " +
			"says (chi's RoutePattern, say). A request with no pattern gets def, and the first one " +
			"is reported to the error handler: route limits are never inert without a word.",
		Route: "route", Routes: "routes", RouteName: "pattern", RouteNamedIn: "the headers",
		RefundWhen:    "the handler ran, given the final status it answered",
		RefundExample: "count only failed logins (" + keep("status == 401") + "), only server errors",
		RefundMore: "An informational status before it (103 Early Hints) is not the answer; " +
			"200 is given when the handler wrote no final status, as net/http answers then, " +
			"and when it hijacked the connection. The handler's ResponseWriter has the same " +
			"optional interfaces (http.Flusher, http.Hijacker, io.ReaderFrom, http.Pusher) as " +
			"the server's, and http.ResponseController reaches the rest.",
		CostOf:     "request",
		Sheddable:  keep(`r.URL.Path == "/stats"`),
		Critical:   `"/login", "/pay"`,
		FailClosed: "answers 503",
		Busy:       "is answered 503 with Retry-After: 1",
		StyleWhat:  "headers responses carry (see package [headers])",
		StyleMore:  "Denials carry Retry-After whatever the style.",
		ShadowAnswered: "no denial, no Retry-After, headers only when [WithHeaderStyle] " +
			"asks",
	},
	"grpcmw": {
		Pkg: "grpcmw",
		Imports: []string{
			"context",
			"github.com/sluice-go/ratelimit/keyfuncs/grpckeys",
			"github.com/sluice-go/ratelimit/rules",
		},
		R: "call", V: "c", In: "ctx context.Context, fullMethod string", Args: "c.ctx, c.method",
		RefundIn: "err error", RefundArgs: "c.err",
		DefaultKey:   "keyOf(grpckeys.FullMethod())",
		Table:        "WithMethodLimits",
		TableName:    "func(c call) string { return c.method }",
		RulesRequest: "func(c call) rules.Request { return rules.FromGRPC(c.ctx, c.method, metadataValue) }",
		RulesRoute: "A call's route is its full method, and its headers are its metadata. The " +
			"client constructors panic beside [WithWait].",

		Req: "call", Reqs: "calls", Panics: "the constructors panic", Mw: "the interceptors",
		Mws: "interceptors", User: "caller", Header: "metadata", Headers: "metadata",
		BindingShown: "the metadata reports the binding limit, and a denial's QuotaFailure " +
			"names every violated limit",
		PolicyShown: "the IETF ratelimit-policy and ratelimit metadata and in QuotaFailure",

		KeyFrom: ", from its context and full method name (\"/package.Service/Method\"); on " +
			"the client side the context is the outgoing one",
		KeyDefault: "[grpckeys.FullMethod](), one bucket per method shared by all its callers",
		TableIntro: "WithMethodLimits sets a limit per method: limits maps full method names " +
			"(\"/package.Service/Method\") to their limits, and other methods get def.",
		Route: "method", Routes: "methods", RouteName: "full name",
		RouteNamedIn:  "the metadata, QuotaFailure",
		RefundWhen:    "the handler (on the client side, the call) returned err",
		RefundExample: "count only calls that failed with a given code, say",
		CostOf:        "call (or, with [WithPerMessage], a message)",
		CostMore: "It cannot be combined with [WithWait], since Limiter.Wait takes one token: " +
			"the client constructors panic.",
		SkipMore: "Health checks (\"/grpc.health.v1.Health/Check\" and \"/Watch\") and server " +
			"reflection are typical.",
		Sheddable:    "a method that fetches statistics",
		Critical:     "a login, a payment",
		PriorityMore: " (on a client, the caller's)",
		FailClosed:   "ends it with codes.Unavailable",
		Busy:         "ends with codes.ResourceExhausted and no retry pushback (the client's retry policy decides when to try again: a retry at once, which Unavailable invites, would add to the load)",
		StyleWhat: "metadata calls carry, mirroring the HTTP headers of package [headers] in " +
			"lower case (\"x-ratelimit-limit\", ...; \"retry-after\" on denials), as trailer " +
			"metadata",
		StyleMore: "On the client side a denial fills the trailer of a grpc.Trailer call " +
			"option. Denials carry their status details and grpc-retry-pushback-ms whatever " +
			"the style.",
		ShadowAnswered: "no denial, metadata only when [WithHeaderStyle] asks",
	},
}
