package keyfuncs

import (
	"fmt"
	"net/netip"

	"github.com/sluice-go/ratelimit/internal/clientip"
)

// IPOption configures ClientIP.
type IPOption func(*ipOptions)

type ipOptions struct {
	trusted   clientip.Set
	platforms []platform
	v4Bits    int
	v6Bits    int
	gin       bool
}

// platform is a header holding the client address, trusted from some sources only.
type platform struct {
	header string
	from   clientip.Set
}

func defaultIPOptions() ipOptions {
	return ipOptions{v4Bits: clientip.DefaultIPv4Bits, v6Bits: clientip.DefaultIPv6Bits}
}

// WithTrustedProxies names the address ranges of the reverse proxies and load balancers in
// front of the service. Default: none, so X-Forwarded-For is never read and the client is
// the socket peer. When the peer is in one of these ranges, ClientIP walks X-Forwarded-For
// from the right, across all its lines, past every address in these ranges, and takes the
// first address outside them; see docs/client-ip.md. Several calls add up; invalid
// prefixes are ignored.
//
// Name only proxies you run (or your cloud runs for you): any host in these ranges can
// claim to be any client.
func WithTrustedProxies(prefixes ...netip.Prefix) IPOption {
	return func(o *ipOptions) { o.trusted = append(o.trusted, clientip.NewSet(prefixes...)...) }
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
	return func(o *ipOptions) {
		o.platforms = append(o.platforms, platform{header: header, from: clientip.NewSet(from...)})
	}
}

// WithIPv4Prefix keys IPv4 clients by the /bits network that holds them. Default: 32, one
// key per address. bits must be between 0 and 32; ClientIP panics otherwise.
func WithIPv4Prefix(bits int) IPOption {
	return func(o *ipOptions) { o.v4Bits = bits }
}

// WithIPv6Prefix keys IPv6 clients by the /bits network that holds them. Default: 64: a
// single host or home is usually given a whole /64, and keying by address would let it use
// 2^64 keys. Use 128 for one key per address, 48 or 56 to be stricter. bits must be between
// 0 and 128; ClientIP panics otherwise.
func WithIPv6Prefix(bits int) IPOption {
	return func(o *ipOptions) { o.v6Bits = bits }
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

func (o ipOptions) validate() error {
	if o.v4Bits < 0 || o.v4Bits > 32 {
		return fmt.Errorf("keyfuncs: WithIPv4Prefix(%d): bits must be between 0 and 32", o.v4Bits)
	}
	if o.v6Bits < 0 || o.v6Bits > 128 {
		return fmt.Errorf("keyfuncs: WithIPv6Prefix(%d): bits must be between 0 and 128", o.v6Bits)
	}
	return nil
}
