package observe

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sluice-go/ratelimit"
)

// Origin says which part of a limiter made of several made a decision.
type Origin struct {
	// Backend names the limiter that decided, as BackendName gives it.
	Backend string
	// Cached reports a denial answered from a cache of the backend's earlier denials,
	// without asking it.
	Cached bool
}

// OriginReporter is implemented by limiters made of several (fallback.Limiter), so that
// reporters can tell which one decided: they call AllowNOrigin in place of AllowN, and
// AllowAllOrigin in place of ratelimit.MultiLimiter's AllowAll, when the limiter
// implements it.
type OriginReporter interface {
	// AllowNOrigin is AllowN, and also returns which limiter decided.
	AllowNOrigin(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, Origin, error)
	// AllowAllOrigin is ratelimit.MultiLimiter's AllowAll, and also returns which limiter
	// decided. A limiter that is not a MultiLimiter returns an error wrapping
	// ratelimit.ErrNotSupported; reporters only call it on one that is.
	AllowAllOrigin(ctx context.Context, reqs []ratelimit.Request) (ratelimit.MultiResult, Origin, error)
}

// HoldOriginReporter is implemented by the ratelimit.Settler of a limiter made of several
// (fallback.Limiter's), so that reporters can tell which one decided a hold: they call
// HoldOrigin in place of Hold when the Settler implements it.
type HoldOriginReporter interface {
	// HoldOrigin is Hold, and also returns which limiter decided.
	HoldOrigin(ctx context.Context, key string, limit ratelimit.Limit, n int, ttl time.Duration) (ratelimit.Result, Origin, error)
}

// BackendNamer is implemented by limiters that name themselves for observers.
type BackendNamer interface {
	// BackendName returns a short, fixed name: the same on every call.
	BackendName() string
}

// BackendName returns the name of l, a rate limiter or a concurrency limiter, for
// Decision.Backend: l.BackendName() if l implements BackendNamer; otherwise, for a pointer
// to a type named Limiter, its package's name ("local", "distributed", "fallback"), and for
// any other type its package-qualified name ("mypkg.Store"). It formats the type, so call
// it once, when a reporter is built.
func BackendName(l any) string {
	if n, ok := l.(BackendNamer); ok {
		return n.BackendName()
	}
	name := strings.TrimLeft(fmt.Sprintf("%T", l), "*")
	if pkg, ok := strings.CutSuffix(name, ".Limiter"); ok {
		return pkg
	}
	return name
}
