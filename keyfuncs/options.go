package keyfuncs

import (
	"net/netip"

	"github.com/sluice-go/ratelimit/internal/clientip"
)

// IPOption configures ClientIP. A nil IPOption is skipped. Each option but WithGinClientIP
// means what its namesake in package httpkeys means, and is documented there.
type IPOption func(*ipOptions)

type ipOptions struct {
	clientip.Options
	gin bool
}

// WithTrustedProxies names the address ranges of the reverse proxies in front of the
// service, whose X-Forwarded-For entries ClientIP then reads. Default: none. See
// [httpkeys.WithTrustedProxies].
func WithTrustedProxies(prefixes ...netip.Prefix) IPOption {
	return func(o *ipOptions) { o.Trust(prefixes...) }
}

// WithPlatformHeader trusts header, which holds a single client address, for requests that
// reach the service from the address ranges in from. Default: no platform headers. See
// [httpkeys.WithPlatformHeader].
func WithPlatformHeader(header string, from ...netip.Prefix) IPOption {
	return func(o *ipOptions) { o.AddPlatform(header, from...) }
}

// WithIPv4Prefix keys IPv4 clients by the /bits network that holds them. Default: 32. See
// [httpkeys.WithIPv4Prefix].
func WithIPv4Prefix(bits int) IPOption {
	return func(o *ipOptions) { o.IPv4Bits = bits }
}

// WithIPv6Prefix keys IPv6 clients by the /bits network that holds them. Default: 64. See
// [httpkeys.WithIPv6Prefix].
func WithIPv6Prefix(bits int) IPOption {
	return func(o *ipOptions) { o.IPv6Bits = bits }
}

// WithGinClientIP makes ClientIP use gin's c.ClientIP() instead of its own resolution, so
// that the engine's settings (Engine.SetTrustedProxies, Engine.TrustedPlatform,
// Engine.RemoteIPHeaders) decide. Default: off. The address is still normalized and grouped
// by WithIPv4Prefix and WithIPv6Prefix; WithTrustedProxies and WithPlatformHeader are
// ignored.
//
// Use it only on an engine whose trusted proxies you have set: gin's default trusts every
// proxy, so any client can pick its key with X-Forwarded-For (CVE-2020-28483).
func WithGinClientIP() IPOption {
	return func(o *ipOptions) { o.gin = true }
}
