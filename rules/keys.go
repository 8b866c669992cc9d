package rules

import (
	"context"
	"net/http"

	"github.com/sluice-go/ratelimit/internal/args"
)

// HTTPKey makes a key function of rules from one over the *http.Request (such as
// httpkeys.ClientIP() or keyfuncs' Gin ones through the request): it fails for a gRPC call.
func HTTPKey(f func(*http.Request) (string, error)) KeyFunc {
	return func(r Request) (string, error) {
		if r.HTTP() == nil {
			return "", errNotHTTP
		}
		return f(r.HTTP())
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
	errNotHTTP = args.ErrKeyEmpty // an HTTP key function asked of a gRPC call: no key
	errNotGRPC = args.ErrKeyEmpty
)
