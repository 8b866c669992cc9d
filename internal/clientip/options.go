package clientip

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/sluice-go/ratelimit/internal/args"
)

// Options is how a key function finds and groups a client's address. The public packages
// embed it in their own unexported option structs, so that each option is written once here
// and documented once, on the public With* function of keyfuncs/httpkeys. The zero Options
// is not valid: start from DefaultOptions.
type Options struct {
	Trusted   Set        // proxies whose X-Forwarded-For entries are read; none by default
	Platforms []Platform // client-address headers, tried in order; none by default
	IPv4Bits  int        // prefix length IPv4 clients are grouped by
	IPv6Bits  int        // prefix length IPv6 clients are grouped by
}

// Platform is a header holding a single client address, believed only from From.
type Platform struct {
	Header string
	From   Set
}

// DefaultOptions returns the options of a key function given none: the socket peer, one key
// per IPv4 address, one per IPv6 /64.
func DefaultOptions() Options {
	return Options{IPv4Bits: DefaultIPv4Bits, IPv6Bits: DefaultIPv6Bits}
}

// Trust adds prefixes to the trusted proxies, dropping invalid ones.
func (o *Options) Trust(prefixes ...netip.Prefix) {
	o.Trusted = append(o.Trusted, NewSet(prefixes...)...)
}

// AddPlatform adds a platform header, believed from the prefixes in from.
func (o *Options) AddPlatform(header string, from ...netip.Prefix) {
	o.Platforms = append(o.Platforms, Platform{Header: header, From: NewSet(from...)})
}

// Validate returns an error, prefixed with pkg, when a prefix length is out of range; the
// key functions panic with its text at construction.
func (o Options) Validate(pkg string) error {
	if o.IPv4Bits < 0 || o.IPv4Bits > 32 {
		return fmt.Errorf("%s: WithIPv4Prefix(%d): bits must be between 0 and 32", pkg, o.IPv4Bits)
	}
	if o.IPv6Bits < 0 || o.IPv6Bits > 128 {
		return fmt.Errorf("%s: WithIPv6Prefix(%d): bits must be between 0 and 128", pkg, o.IPv6Bits)
	}
	return nil
}

// Key returns Key(a, o.IPv4Bits, o.IPv6Bits).
func (o Options) Key(a netip.Addr) string {
	return Key(a, o.IPv4Bits, o.IPv6Bits)
}

// Client returns the address of the client behind r: the socket peer (r.RemoteAddr), or,
// when the peer is a trusted proxy, the address Forwarded finds in X-Forwarded-For; then, if
// that address is in a platform's ranges, the address in the platform's header, when the
// header holds exactly one. ok is false when r.RemoteAddr is not an IP address (a Unix
// socket, say).
func (o Options) Client(r *http.Request) (a netip.Addr, ok bool) {
	peer, ok := ParseAddr(r.RemoteAddr)
	if !ok {
		return netip.Addr{}, false
	}
	client := Forwarded(peer, r.Header.Values("X-Forwarded-For"), o.Trusted)
	for _, p := range o.Platforms {
		if !p.From.Contains(client) {
			continue
		}
		if a, ok := ParseAddr(r.Header.Get(p.Header)); ok {
			return a, true
		}
	}
	return client, true
}

// RequestKeyParts returns RequestKey(r) in two parts, "ip:" and the host of r.RemoteAddr,
// without allocating, when that host is the text of the key's address (see KeyParts): so
// for a client that is the socket peer, or a proxy's client written as the peer is. ok is
// false otherwise, for the caller to use RequestKey.
func (o Options) RequestKeyParts(r *http.Request) (prefix, value string, ok bool) {
	a, ok := o.Client(r)
	if !ok {
		return "", "", false
	}
	host := r.RemoteAddr
	if i := strings.LastIndexByte(host, ':'); i >= 0 && strings.Count(host, ":") == 1 {
		host = host[:i] // 192.0.2.1:40000
	} else if strings.HasPrefix(host, "[") {
		if i := strings.LastIndex(host, "]:"); i > 0 {
			host = host[1:i] // [2001:db8::1]:40000
		}
	}
	return KeyParts(a, o.IPv4Bits, o.IPv6Bits, host)
}

// RequestKey returns the key of the client behind r (see Client), or an error wrapping
// ratelimit.ErrInvalidArgument when r.RemoteAddr is not an IP address. The error does not repeat
// r.RemoteAddr, which whatever set it may have filled with a client's data.
func (o Options) RequestKey(r *http.Request) (string, error) {
	a, ok := o.Client(r)
	if !ok {
		return "", fmt.Errorf("%w: remote address is not an IP address", args.ErrKeyEmpty)
	}
	return o.Key(a), nil
}
