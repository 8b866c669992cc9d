package rules

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"
	"google.golang.org/grpc/metadata"

	"github.com/sluice-go/ratelimit"
)

// HTTP returns the limits of each request under the rules in force, for
// httpmw.WithLimits(rules.HTTP(mux)). A request's Route is the pattern http.ServeMux routed
// it by, or, before routing (the middleware wrapping mux itself), the pattern mux will
// route it by; mux may be nil when the middleware wraps the mux's handlers.
func (r *Rules) HTTP(mux *http.ServeMux) func(*http.Request) []ratelimit.Request {
	return func(req *http.Request) []ratelimit.Request {
		v := &httpView{r: req, pattern: req.Pattern}
		if v.pattern == "" && mux != nil {
			_, v.pattern = mux.Handler(req)
		}
		return r.Limits(v)
	}
}

// Gin returns the limits of each request under the rules in force, for
// ginmw.WithLimits(rules.Gin()): a request's Route is Gin's FullPath ("/v1/items/:id").
func (r *Rules) Gin() func(*gin.Context) []ratelimit.Request {
	return func(c *gin.Context) []ratelimit.Request {
		return r.Limits(&httpView{r: c.Request, pattern: c.FullPath()})
	}
}

// GRPC returns the limits of each call under the rules in force, for
// grpcmw.WithLimits(rules.GRPC()): a call's Route and FullMethod are its full method, its
// headers the incoming metadata (on the client side, the outgoing).
func (r *Rules) GRPC() func(ctx context.Context, fullMethod string) []ratelimit.Request {
	return func(ctx context.Context, fullMethod string) []ratelimit.Request {
		return r.Limits(&grpcView{ctx: ctx, method: fullMethod})
	}
}

// HTTPKey makes a key function of rules from one over the *http.Request (such as
// httpkeys.ClientIP() or keyfuncs' Gin ones through the request): it fails for a gRPC call.
func HTTPKey(f func(*http.Request) (string, error)) KeyFunc {
	return func(r Request) (string, error) {
		v, ok := r.(interface{ HTTPRequest() *http.Request })
		if !ok {
			return "", errNotHTTP
		}
		return f(v.HTTPRequest())
	}
}

// GRPCKey makes a key function of rules from one over a gRPC call's context and full
// method (such as grpckeys.PeerIP()): it fails for an HTTP request.
func GRPCKey(f func(ctx context.Context, fullMethod string) (string, error)) KeyFunc {
	return func(r Request) (string, error) {
		if r.FullMethod() == "" {
			return "", errNotGRPC
		}
		return f(r.Context(), r.FullMethod())
	}
}

var (
	errNotHTTP = ratelimit.ErrKeyEmpty // an HTTP key function asked of a gRPC call: no key
	errNotGRPC = ratelimit.ErrKeyEmpty
)

// httpView is an HTTP request as rules read it.
type httpView struct {
	r       *http.Request
	pattern string
}

func (v *httpView) Context() context.Context   { return v.r.Context() }
func (v *httpView) Route() string              { return v.pattern }
func (v *httpView) Method() string             { return v.r.Method }
func (v *httpView) FullMethod() string         { return "" }
func (v *httpView) Header(name string) string  { return v.r.Header.Get(name) }
func (v *httpView) HTTPRequest() *http.Request { return v.r }

// grpcView is a gRPC call as rules read it.
type grpcView struct {
	ctx    context.Context
	method string
}

func (v *grpcView) Context() context.Context { return v.ctx }
func (v *grpcView) Route() string            { return v.method }
func (v *grpcView) Method() string           { return "" }
func (v *grpcView) FullMethod() string       { return v.method }
func (v *grpcView) Header(name string) string {
	md, ok := metadata.FromIncomingContext(v.ctx)
	if !ok {
		md, _ = metadata.FromOutgoingContext(v.ctx)
	}
	if vals := md.Get(name); len(vals) > 0 {
		return vals[0]
	}
	return ""
}
