package httpkeys

import (
	"net/netip"

	"github.com/sluice-go/ratelimit/internal/clientip"
)

// IPOption configures ClientIP. A nil IPOption is skipped.
//
// These options are the ones keyfuncs.ClientIP takes for Gin, and are documented here once;
// https://github.com/sluice-go/ratelimit/blob/main/docs/client-ip.md shows them at work behind
// proxies and platforms.
type IPOption func(*ipOptions)

type ipOptions struct {
	clientip.Options
}

// WithTrustedProxies names the address ranges of the reverse proxies and load balancers in
// front of the service. Default: none, so X-Forwarded-For is never read and the client is the
// socket peer. When the peer is in one of these ranges, ClientIP walks X-Forwarded-For from
// the right, across all its lines, past every address in these ranges, and takes the first
// address outside them; see
// https://github.com/sluice-go/ratelimit/blob/main/docs/client-ip.md. Several calls add up;
// invalid prefixes are ignored.
//
// Name only proxies you run (or your cloud runs for you): any host in these ranges can
// claim to be any client. The ranges are matched against addresses as they arrive: a proxy
// that reaches the service through a NAT64 translator is named by its IPv6 address.
func WithTrustedProxies(prefixes ...netip.Prefix) IPOption {
	return func(o *ipOptions) { o.Trust(prefixes...) }
}

// WithPlatformHeader trusts header, which holds a single client address (such as
// Cloudflare's CF-Connecting-IP or Fly.io's Fly-Client-IP), for requests that reach the
// service from the platform's address ranges, given in from. Default: no platform headers.
// The source checked is the address ClientIP reaches after the X-Forwarded-For walk (the
// socket peer when no proxies are trusted), so a client that bypasses the platform and
// sends the header itself is keyed by its own address. A header that is missing or does not
// hold exactly one address is ignored. Platforms publish their ranges and change them:
// load them from the platform when the service starts rather than hard-coding them.
// Several calls add platforms, tried in order.
func WithPlatformHeader(header string, from ...netip.Prefix) IPOption {
	return func(o *ipOptions) { o.AddPlatform(header, from...) }
}

// WithIPv4Prefix keys IPv4 clients by the /bits network that holds them. Default: 32, one
// key per address. It applies as well to IPv4 clients that reach the service through a
// NAT64 translator (64:ff9b::/96, 64:ff9b:1::/48) or with an IPv4-compatible address
// (::192.0.2.7), which are keyed by their IPv4 address. bits must be between 0 and 32;
// ClientIP panics otherwise.
func WithIPv4Prefix(bits int) IPOption {
	return func(o *ipOptions) { o.IPv4Bits = bits }
}

// WithIPv6Prefix keys IPv6 clients by the /bits network that holds them. Default: 64: a
// single host or home is usually given a whole /64, and keying by address would let it use
// 2^64 keys. Use 128 for one key per address, 48 or 56 to be stricter. bits must be between
// 0 and 128; ClientIP panics otherwise.
func WithIPv6Prefix(bits int) IPOption {
	return func(o *ipOptions) { o.IPv6Bits = bits }
}
