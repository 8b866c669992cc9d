package observe

import (
	"context"

	"github.com/sluice-go/ratelimit"
)

// capability is a set of the optional interfaces a wrapper of a Limiter forwards.
type capability uint8

const (
	capMulti     capability = 1 << iota // ratelimit.MultiLimiter
	capInspector                        // ratelimit.Inspector
	capValidator                        // ratelimit.LimitValidator
	capOrigins                          // OriginReporter
)

// capabilitiesOf returns the optional interfaces l implements.
func capabilitiesOf(l ratelimit.Limiter) capability {
	var c capability
	if _, ok := l.(ratelimit.MultiLimiter); ok {
		c |= capMulti
	}
	if _, ok := l.(ratelimit.Inspector); ok {
		c |= capInspector
	}
	if _, ok := l.(ratelimit.LimitValidator); ok {
		c |= capValidator
	}
	if _, ok := l.(OriginReporter); ok {
		c |= capOrigins
	}
	return c
}

// full is every method a wrapper may show: each optional interface, its backend's name and
// Unwrap. observed implements it (checked in wrap.go), so that expose can show the part of
// it that its Limiter has.
type full interface {
	ratelimit.Limiter
	ratelimit.MultiLimiter
	ratelimit.Inspector
	ratelimit.LimitValidator
	OriginReporter
	BackendNamer
	Unwrap() ratelimit.Limiter
}

// expose returns f as a Limiter that implements exactly the optional interfaces of caps,
// as net/http's wrappers of a ResponseWriter do for Flusher and Hijacker: the only way for
// a wrapper to be found by type assertion for what its Limiter can do, and for nothing
// more. Each part below carries one capability's methods; the switch picks the struct
// type that embeds the parts caps names.
func expose(f *observed, caps capability) ratelimit.Limiter {
	b, m, i, v, o := basePart{f}, multiPart{f}, inspectorPart{f}, validatorPart{f}, originsPart{f}
	switch caps & (capMulti | capInspector | capValidator | capOrigins) {
	case 0:
		return b
	case capMulti:
		return struct {
			basePart
			multiPart
		}{b, m}
	case capInspector:
		return struct {
			basePart
			inspectorPart
		}{b, i}
	case capMulti | capInspector:
		return struct {
			basePart
			multiPart
			inspectorPart
		}{b, m, i}
	case capValidator:
		return struct {
			basePart
			validatorPart
		}{b, v}
	case capMulti | capValidator:
		return struct {
			basePart
			multiPart
			validatorPart
		}{b, m, v}
	case capInspector | capValidator:
		return struct {
			basePart
			inspectorPart
			validatorPart
		}{b, i, v}
	case capMulti | capInspector | capValidator:
		return struct {
			basePart
			multiPart
			inspectorPart
			validatorPart
		}{b, m, i, v}
	case capOrigins:
		return struct {
			basePart
			originsPart
		}{b, o}
	case capMulti | capOrigins:
		return struct {
			basePart
			multiPart
			originsPart
		}{b, m, o}
	case capInspector | capOrigins:
		return struct {
			basePart
			inspectorPart
			originsPart
		}{b, i, o}
	case capMulti | capInspector | capOrigins:
		return struct {
			basePart
			multiPart
			inspectorPart
			originsPart
		}{b, m, i, o}
	case capValidator | capOrigins:
		return struct {
			basePart
			validatorPart
			originsPart
		}{b, v, o}
	case capMulti | capValidator | capOrigins:
		return struct {
			basePart
			multiPart
			validatorPart
			originsPart
		}{b, m, v, o}
	case capInspector | capValidator | capOrigins:
		return struct {
			basePart
			inspectorPart
			validatorPart
			originsPart
		}{b, i, v, o}
	default: // every capability
		return struct {
			basePart
			multiPart
			inspectorPart
			validatorPart
			originsPart
		}{b, m, i, v, o}
	}
}

// basePart carries the methods of every wrapper: ratelimit.Limiter's, BackendName and
// Unwrap.
type basePart struct{ f *observed }

func (p basePart) Allow(ctx context.Context, key string, limit ratelimit.Limit) (ratelimit.Result, error) {
	return p.f.Allow(ctx, key, limit)
}

func (p basePart) AllowN(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, error) {
	return p.f.AllowN(ctx, key, limit, n)
}

func (p basePart) Wait(ctx context.Context, key string, limit ratelimit.Limit) error {
	return p.f.Wait(ctx, key, limit)
}

func (p basePart) Close() error { return p.f.Close() }

func (p basePart) BackendName() string { return p.f.BackendName() }

func (p basePart) Unwrap() ratelimit.Limiter { return p.f.Unwrap() }

// multiPart carries ratelimit.MultiLimiter's method.
type multiPart struct{ f *observed }

func (p multiPart) AllowAll(ctx context.Context, reqs []ratelimit.Request) (ratelimit.MultiResult, error) {
	return p.f.AllowAll(ctx, reqs)
}

// inspectorPart carries ratelimit.Inspector's methods.
type inspectorPart struct{ f *observed }

func (p inspectorPart) Peek(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, error) {
	return p.f.Peek(ctx, key, limit, n)
}

func (p inspectorPart) Refund(ctx context.Context, key string, limit ratelimit.Limit, n int, c ratelimit.Charge) (ratelimit.Result, error) {
	return p.f.Refund(ctx, key, limit, n, c)
}

func (p inspectorPart) Reset(ctx context.Context, key string, limit ratelimit.Limit) error {
	return p.f.Reset(ctx, key, limit)
}

// validatorPart carries ratelimit.LimitValidator's method.
type validatorPart struct{ f *observed }

func (p validatorPart) ValidateLimit(limit ratelimit.Limit) error { return p.f.ValidateLimit(limit) }

// originsPart carries OriginReporter's methods.
type originsPart struct{ f *observed }

func (p originsPart) AllowNOrigin(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, Origin, error) {
	return p.f.AllowNOrigin(ctx, key, limit, n)
}

func (p originsPart) AllowAllOrigin(ctx context.Context, reqs []ratelimit.Request) (ratelimit.MultiResult, Origin, error) {
	return p.f.AllowAllOrigin(ctx, reqs)
}
