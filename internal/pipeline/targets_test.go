package pipeline_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/ginmw"
	"github.com/sluice-go/ratelimit/grpcmw"
	"github.com/sluice-go/ratelimit/headers"
	"github.com/sluice-go/ratelimit/httpmw"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/priority"
	"github.com/sluice-go/ratelimit/rules"
)

// setup is one middleware configuration, said once for every framework.
type setup struct {
	limiter  ratelimit.Limiter
	limit    ratelimit.Limit
	limitFn  bool                   // give the limit through WithLimitFunc rather than WithLimit
	limitNow func() ratelimit.Limit // give this limit of each request through WithLimitFunc
	keyFails bool                   // the key function fails
	cost     func() int             // nil: the default cost
	skip     bool                   // the skip function exempts every request
	closed   bool                   // WithFailClosed
	observer observe.Observer       // nil: none
	shadow   bool
	name     string                // policy name; "": the default
	limits   []ratelimit.Request   // with WithLimits, instead of limit
	refundOK bool                  // WithRefundIf: refund the requests that succeeded
	priority func() priority.Level // WithPriorityFunc; nil: none

	key      string                     // WithKeyFunc returning key; "": the default key
	limitsFn func() []ratelimit.Request // WithLimits, the limits of each request; nil: limits
	// WithRefundIf, deciding each charged request; nil: refundOK
	refund   func() bool
	ietf     bool                // WithHeaderStyle(headers.StyleBoth)
	conc     concurrency.Limiter // WithConcurrency(conc, inFlight)
	inFlight int
	rules    *rules.Rules // WithRules, instead of limit
	// WithErrorHandler, told each error and letting the request go on; nil: the default
	errs func(error)
	// WithSettle, giving each request's actual cost; nil: no settling
	settle func() (int, bool)
}

// multi reports whether s gives its limits through WithLimits.
func (s setup) multi() bool { return s.limits != nil || s.limitsFn != nil }

// reqs returns the limits of a request under WithLimits.
func (s setup) reqs() []ratelimit.Request {
	if s.limitsFn != nil {
		return s.limitsFn()
	}
	return s.limits
}

// refunds reports whether a charged request that succeeded is refunded.
func (s setup) refunds() bool {
	if s.refund != nil {
		return s.refund()
	}
	return true
}

// answer is what a request got, in terms every framework shares.
type answer struct {
	kind   string            // ok, denied, too-costly, invalid, unavailable, ended
	fields map[string]string // rate-limit fields the client saw, names in lower case
	ran    bool              // the handler ran
}

// target serves one framework's middleware built from a setup, on loopback, and returns a
// function that sends one request and waits until the server is done with it.
type target struct {
	name  string
	serve func(t *testing.T, s setup) func(ctx context.Context) answer
	// defaultKey is the middleware's own key of every request the target sends: the
	// client's loopback address, or the gRPC method.
	defaultKey string
}

var targets = []target{
	{"gin", serveGin, "ip:127.0.0.1"},
	{"http", serveHTTP, "ip:127.0.0.1"},
	{"grpc-unary", func(t *testing.T, s setup) func(context.Context) answer { return serveGRPC(t, s, false) }, "rpc:" + unaryMethod},
	{"grpc-stream", func(t *testing.T, s setup) func(context.Context) answer { return serveGRPC(t, s, true) }, "rpc:" + streamMethod},
}

var errNoKey = errors.New("no key in this request")

// record is what the server side saw of one request.
type record struct {
	mu     sync.Mutex
	ran    bool
	status int    // HTTP status
	body   string // HTTP body
	err    error  // gRPC status
	done   chan struct{}
}

func newRecord() *record { return &record{done: make(chan struct{}, 1)} }

func (r *record) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ran, r.status, r.body, r.err = false, 0, "", nil
}

// httpKind maps an HTTP answer to its kind.
func httpKind(status int, body string) string {
	switch {
	case status == http.StatusOK:
		return "ok"
	case status == http.StatusTooManyRequests && strings.Contains(body, "rate limit exceeded"):
		return "denied"
	case status == http.StatusTooManyRequests && strings.Contains(body, "cost exceeds"):
		return "too-costly"
	case status == http.StatusInternalServerError:
		return "invalid"
	case status == http.StatusServiceUnavailable && body == "":
		return "ended"
	case status == http.StatusServiceUnavailable:
		return "unavailable"
	}
	return "unexpected"
}

// httpFields returns the rate-limit fields of h.
func httpFields(h http.Header) map[string]string {
	f := map[string]string{}
	for _, name := range []string{"Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit-Policy"} {
		if v := h.Get(name); v != "" {
			f[strings.ToLower(name)] = v
		}
	}
	return f
}

// capture records the status and body an HTTP handler writes.
type capture struct {
	http.ResponseWriter
	status int
	body   strings.Builder
}

func (c *capture) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
	c.ResponseWriter.WriteHeader(status)
}

func (c *capture) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	c.body.Write(b)
	return c.ResponseWriter.Write(b)
}

// outer wraps h so that rec learns what h answered, once h has returned.
func outer(rec *record, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := &capture{ResponseWriter: w}
		h.ServeHTTP(c, r)
		rec.mu.Lock()
		rec.status, rec.body = c.status, c.body.String()
		rec.mu.Unlock()
		rec.done <- struct{}{}
	})
}

// get sends GET url and returns the answer, once the server is done.
func get(t *testing.T, ctx context.Context, url string, rec *record) answer {
	rec.reset()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	var fields map[string]string
	if resp, err := http.DefaultClient.Do(req); err == nil {
		fields = httpFields(resp.Header)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	<-rec.done
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return answer{kind: httpKind(rec.status, rec.body), fields: fields, ran: rec.ran}
}

func serveGin(t *testing.T, s setup) func(context.Context) answer {
	var opts []ginmw.Option
	if s.closed {
		opts = append(opts, ginmw.WithFailClosed())
	}
	switch {
	case s.rules != nil:
		opts = append(opts, ginmw.WithRules(s.rules))
	case s.multi():
	case s.limitNow != nil:
		opts = append(opts, ginmw.WithLimitFunc(func(*gin.Context) ratelimit.Limit { return s.limitNow() }))
	case s.limitFn:
		opts = append(opts, ginmw.WithLimitFunc(func(*gin.Context) ratelimit.Limit { return s.limit }))
	default:
		opts = append(opts, ginmw.WithLimit(s.limit))
	}
	if s.keyFails {
		opts = append(opts, ginmw.WithKeyFunc(func(*gin.Context) (string, error) { return "", errNoKey }))
	}
	if s.key != "" {
		opts = append(opts, ginmw.WithKeyFunc(func(*gin.Context) (string, error) { return s.key, nil }))
	}
	if s.cost != nil {
		opts = append(opts, ginmw.WithCostFunc(func(*gin.Context) int { return s.cost() }))
	}
	if s.multi() {
		opts = append(opts, ginmw.WithLimits(func(*gin.Context) []ratelimit.Request { return s.reqs() }))
	}
	if s.refundOK || s.refund != nil {
		opts = append(opts, ginmw.WithRefundIf(func(c *gin.Context) bool { return c.Writer.Status() == http.StatusOK && s.refunds() }))
	}
	if s.settle != nil {
		opts = append(opts, ginmw.WithSettle(func(*gin.Context) (int, bool) { return s.settle() }))
	}
	if s.observer != nil {
		opts = append(opts, ginmw.WithObserver(s.observer))
	}
	if s.shadow {
		opts = append(opts, ginmw.WithShadow())
	}
	if s.ietf {
		opts = append(opts, ginmw.WithHeaderStyle(headers.StyleBoth))
	}
	if s.conc != nil {
		opts = append(opts, ginmw.WithConcurrency(s.conc, s.inFlight))
	}
	if s.name != "" {
		opts = append(opts, ginmw.WithPolicyName(s.name))
	}
	if s.skip {
		opts = append(opts, ginmw.WithSkipFunc(func(*gin.Context) bool { return true }))
	}
	if s.errs != nil {
		opts = append(opts, ginmw.WithErrorHandler(func(_ *gin.Context, err error) { s.errs(err) }))
	}
	if s.priority != nil {
		opts = append(opts, ginmw.WithPriorityFunc(func(*gin.Context) priority.Level { return s.priority() }))
	}
	rec := newRecord()
	r := gin.New()
	r.GET("/x", ginmw.New(s.limiter, opts...), func(c *gin.Context) {
		rec.mu.Lock()
		rec.ran = true
		rec.mu.Unlock()
		c.String(http.StatusOK, "ok")
	})
	srv := httptest.NewServer(outer(rec, r))
	t.Cleanup(srv.Close)
	return func(ctx context.Context) answer { return get(t, ctx, srv.URL+"/x", rec) }
}

func serveHTTP(t *testing.T, s setup) func(context.Context) answer {
	var opts []httpmw.Option
	if s.closed {
		opts = append(opts, httpmw.WithFailClosed())
	}
	switch {
	case s.rules != nil:
		opts = append(opts, httpmw.WithRules(s.rules))
	case s.multi():
	case s.limitNow != nil:
		opts = append(opts, httpmw.WithLimitFunc(func(*http.Request) ratelimit.Limit { return s.limitNow() }))
	case s.limitFn:
		opts = append(opts, httpmw.WithLimitFunc(func(*http.Request) ratelimit.Limit { return s.limit }))
	default:
		opts = append(opts, httpmw.WithLimit(s.limit))
	}
	if s.keyFails {
		opts = append(opts, httpmw.WithKeyFunc(func(*http.Request) (string, error) { return "", errNoKey }))
	}
	if s.key != "" {
		opts = append(opts, httpmw.WithKeyFunc(func(*http.Request) (string, error) { return s.key, nil }))
	}
	if s.cost != nil {
		opts = append(opts, httpmw.WithCostFunc(func(*http.Request) int { return s.cost() }))
	}
	if s.multi() {
		opts = append(opts, httpmw.WithLimits(func(*http.Request) []ratelimit.Request { return s.reqs() }))
	}
	if s.refundOK || s.refund != nil {
		opts = append(opts, httpmw.WithRefundIf(func(_ *http.Request, status int) bool { return status == http.StatusOK && s.refunds() }))
	}
	if s.settle != nil {
		opts = append(opts, httpmw.WithSettle(func(*http.Request, int) (int, bool) { return s.settle() }))
	}
	if s.observer != nil {
		opts = append(opts, httpmw.WithObserver(s.observer))
	}
	if s.shadow {
		opts = append(opts, httpmw.WithShadow())
	}
	if s.ietf {
		opts = append(opts, httpmw.WithHeaderStyle(headers.StyleBoth))
	}
	if s.conc != nil {
		opts = append(opts, httpmw.WithConcurrency(s.conc, s.inFlight))
	}
	if s.name != "" {
		opts = append(opts, httpmw.WithPolicyName(s.name))
	}
	if s.skip {
		opts = append(opts, httpmw.WithSkipFunc(func(*http.Request) bool { return true }))
	}
	if s.errs != nil {
		opts = append(opts, httpmw.WithErrorHandler(func(_ http.ResponseWriter, _ *http.Request, err error) bool { s.errs(err); return false }))
	}
	if s.priority != nil {
		opts = append(opts, httpmw.WithPriorityFunc(func(*http.Request) priority.Level { return s.priority() }))
	}
	rec := newRecord()
	mux := http.NewServeMux()
	mux.Handle("GET /x", httpmw.New(s.limiter, opts...)(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		rec.mu.Lock()
		rec.ran = true
		rec.mu.Unlock()
		_, _ = io.WriteString(w, "ok")
	})))
	srv := httptest.NewServer(outer(rec, mux))
	t.Cleanup(srv.Close)
	return func(ctx context.Context) answer { return get(t, ctx, srv.URL+"/x", rec) }
}

// The gRPC test service, registered without generated code: /t.S/U is unary and /t.S/S a
// server stream that sends one message; both echo a StringValue.
const (
	unaryMethod  = "/t.S/U"
	streamMethod = "/t.S/S"
)

func serviceDesc(rec *record) *grpc.ServiceDesc {
	ran := func() {
		rec.mu.Lock()
		rec.ran = true
		rec.mu.Unlock()
	}
	return &grpc.ServiceDesc{
		ServiceName: "t.S",
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{MethodName: "U", Handler: func(_ any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
			in := new(wrapperspb.StringValue)
			if err := dec(in); err != nil {
				return nil, err
			}
			return icpt(ctx, in, &grpc.UnaryServerInfo{FullMethod: unaryMethod}, func(context.Context, any) (any, error) {
				ran()
				return in, nil
			})
		}}},
		Streams: []grpc.StreamDesc{{StreamName: "S", ServerStreams: true, Handler: func(_ any, ss grpc.ServerStream) error {
			ran()
			in := new(wrapperspb.StringValue)
			if err := ss.RecvMsg(in); err != nil {
				return err
			}
			return ss.SendMsg(in)
		}}},
	}
}

func serveGRPC(t *testing.T, s setup, stream bool) func(context.Context) answer {
	var opts []grpcmw.Option
	if s.closed {
		opts = append(opts, grpcmw.WithFailClosed())
	}
	switch {
	case s.rules != nil:
		opts = append(opts, grpcmw.WithRules(s.rules))
	case s.multi():
	case s.limitNow != nil:
		opts = append(opts, grpcmw.WithLimitFunc(func(context.Context, string) ratelimit.Limit { return s.limitNow() }))
	case s.limitFn:
		opts = append(opts, grpcmw.WithLimitFunc(func(context.Context, string) ratelimit.Limit { return s.limit }))
	default:
		opts = append(opts, grpcmw.WithLimit(s.limit))
	}
	if s.keyFails {
		opts = append(opts, grpcmw.WithKeyFunc(func(context.Context, string) (string, error) { return "", errNoKey }))
	}
	if s.key != "" {
		opts = append(opts, grpcmw.WithKeyFunc(func(context.Context, string) (string, error) { return s.key, nil }))
	}
	if s.cost != nil {
		opts = append(opts, grpcmw.WithCostFunc(func(context.Context, string) int { return s.cost() }))
	}
	if s.multi() {
		opts = append(opts, grpcmw.WithLimits(func(context.Context, string) []ratelimit.Request { return s.reqs() }))
	}
	if s.refundOK || s.refund != nil {
		opts = append(opts, grpcmw.WithRefundIf(func(_ context.Context, _ string, err error) bool { return err == nil && s.refunds() }))
	}
	if s.settle != nil {
		opts = append(opts, grpcmw.WithSettle(func(context.Context, string, error) (int, bool) { return s.settle() }))
	}
	if s.observer != nil {
		opts = append(opts, grpcmw.WithObserver(s.observer))
	}
	if s.shadow {
		opts = append(opts, grpcmw.WithShadow())
	}
	if s.ietf {
		opts = append(opts, grpcmw.WithHeaderStyle(headers.StyleBoth))
	}
	if s.conc != nil {
		opts = append(opts, grpcmw.WithConcurrency(s.conc, s.inFlight))
	}
	if s.name != "" {
		opts = append(opts, grpcmw.WithPolicyName(s.name))
	}
	if s.skip {
		opts = append(opts, grpcmw.WithSkipFunc(func(context.Context, string) bool { return true }))
	}
	if s.errs != nil {
		opts = append(opts, grpcmw.WithErrorHandler(func(_ context.Context, _ string, err error) error { s.errs(err); return nil }))
	}
	if s.priority != nil {
		opts = append(opts, grpcmw.WithPriorityFunc(func(context.Context, string) priority.Level { return s.priority() }))
	}
	rec := newRecord()
	done := func(err error) {
		rec.mu.Lock()
		rec.err = err
		rec.mu.Unlock()
		rec.done <- struct{}{}
	}
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			resp, err := h(ctx, req)
			done(err)
			return resp, err
		}, grpcmw.UnaryServerInterceptor(s.limiter, opts...)),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			err := h(srv, ss)
			done(err)
			return err
		}, grpcmw.StreamServerInterceptor(s.limiter, opts...)))
	srv.RegisterService(serviceDesc(rec), nil)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })

	return func(ctx context.Context) answer {
		rec.reset()
		var md metadata.MD
		in, out := wrapperspb.String("hi"), new(wrapperspb.StringValue)
		if stream {
			cs, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, streamMethod)
			if err == nil && cs.SendMsg(in) == nil && cs.CloseSend() == nil {
				for cs.RecvMsg(out) == nil {
				}
				md = cs.Trailer()
			}
		} else {
			_ = conn.Invoke(ctx, unaryMethod, in, out, grpc.Trailer(&md))
		}
		<-rec.done
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return answer{kind: grpcKind(rec.err), fields: grpcFields(md), ran: rec.ran}
	}
}

// grpcKind maps a gRPC status to its kind.
func grpcKind(err error) string {
	st := status.Convert(err)
	switch {
	case err == nil:
		return "ok"
	case st.Code().String() == "ResourceExhausted" && st.Message() == "rate limit exceeded":
		return "denied"
	case st.Code().String() == "ResourceExhausted":
		return "too-costly"
	case st.Code().String() == "Internal":
		return "invalid"
	case st.Code().String() == "Unavailable":
		return "unavailable"
	case st.Code().String() == "Canceled" || st.Code().String() == "DeadlineExceeded":
		return "ended"
	}
	return "unexpected: " + st.String()
}

// grpcFields returns the rate-limit fields of a trailer.
func grpcFields(md metadata.MD) map[string]string {
	f := map[string]string{}
	for _, name := range []string{"retry-after", "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "ratelimit-policy"} {
		if v := md.Get(name); len(v) > 0 {
			f[name] = v[0]
		}
	}
	return f
}
