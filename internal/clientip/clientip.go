// Package clientip finds the address of the client behind a request and turns it into a
// rate-limit key: parsing socket and X-Forwarded-For addresses with net/netip, walking the
// X-Forwarded-For chain past trusted proxies, and grouping addresses into prefixes. It is
// shared by keyfuncs (Gin) and keyfuncs/grpckeys (gRPC), and uses only the standard library.
//
// Nothing here panics on malformed input: a value that is not an address is reported with
// ok == false, and the walk stops at it.
package clientip

import (
	"net/netip"
	"strconv"
	"strings"
)

// Prefix lengths used when no option says otherwise: one key per IPv4 address, one key per
// IPv6 /64 (the smallest block an ISP or cloud hands a single customer, so a client that
// owns a /64 cannot mint fresh keys by rotating the low 64 bits).
const (
	DefaultIPv4Bits = 32
	DefaultIPv6Bits = 64
)

// Normalize unmaps an IPv4-mapped IPv6 address (::ffff:192.0.2.1 becomes 192.0.2.1) and drops
// an IPv6 zone, so that one client has one spelling.
func Normalize(a netip.Addr) netip.Addr {
	return a.Unmap().WithZone("")
}

// ParseAddr parses a bare address, an address with a port ("192.0.2.1:80",
// "[2001:db8::1]:80") or a bracketed IPv6 address ("[2001:db8::1]"), after trimming spaces
// and tabs. It returns the normalized address, or ok == false.
func ParseAddr(s string) (a netip.Addr, ok bool) {
	s = strings.Trim(s, " \t")
	if a, err := netip.ParseAddr(s); err == nil {
		return Normalize(a), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return Normalize(ap.Addr()), true
	}
	if len(s) > 2 && s[0] == '[' && s[len(s)-1] == ']' {
		if a, err := netip.ParseAddr(s[1 : len(s)-1]); err == nil && a.Is6() {
			return Normalize(a), true
		}
	}
	return netip.Addr{}, false
}

// NormalizePrefix masks p and rewrites an IPv4-mapped IPv6 prefix (::ffff:10.0.0.0/104) as
// the IPv4 prefix it covers (10.0.0.0/8), so that it matches normalized addresses.
func NormalizePrefix(p netip.Prefix) netip.Prefix {
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p.Masked()
}

// Set is a list of prefixes; the zero Set contains nothing.
type Set []netip.Prefix

// NewSet returns the normalized prefixes as a Set, dropping invalid ones.
func NewSet(prefixes ...netip.Prefix) Set {
	s := make(Set, 0, len(prefixes))
	for _, p := range prefixes {
		if p.IsValid() {
			s = append(s, NormalizePrefix(p))
		}
	}
	return s
}

// Contains reports whether a is in one of the prefixes of s.
func (s Set) Contains(a netip.Addr) bool {
	for _, p := range s {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Forwarded returns the client address behind peer, the address of the socket the request
// came from, given the X-Forwarded-For header lines in the order they were received.
//
// Each proxy appends the address it received the request from, so the list is read from the
// right (the entry the nearest proxy wrote), across all lines. While the address reached so
// far is trusted, the walk moves one entry left; the first address that is not trusted is the
// client, since everything to the right of it was written by trusted proxies and everything
// to its left was written by the client or by proxies nobody vouches for. Empty entries are
// skipped. When the walk meets an entry that is not an address, or runs out of entries while
// every address has been trusted, it returns the last address it reached: a trusted proxy,
// which then carries the limit for everything behind it (limited, never spoofable).
//
// With no trusted prefixes the peer is returned at once and the header is never read.
func Forwarded(peer netip.Addr, lines []string, trusted Set) netip.Addr {
	client := peer
	for i := len(lines) - 1; i >= 0; i-- {
		rest := lines[i]
		for rest != "" {
			if !trusted.Contains(client) {
				return client
			}
			var entry string
			if j := strings.LastIndexByte(rest, ','); j >= 0 {
				entry, rest = rest[j+1:], rest[:j]
			} else {
				entry, rest = rest, ""
			}
			if strings.Trim(entry, " \t") == "" {
				continue
			}
			a, ok := ParseAddr(entry)
			if !ok {
				return client
			}
			client = a
		}
	}
	return client
}

// Key formats a as a rate-limit key, "ip:" followed by the address, or by the prefix of
// v4Bits or v6Bits that holds it when that prefix is shorter than the address:
// "ip:192.0.2.7", "ip:2001:db8:1:2::/64". An invalid address gives "ip:invalid"; callers
// check validity first.
func Key(a netip.Addr, v4Bits, v6Bits int) string {
	a = Normalize(a)
	bits := v6Bits
	if a.Is4() {
		bits = v4Bits
	}
	switch {
	case !a.IsValid():
		return "ip:invalid"
	case bits >= a.BitLen():
		return "ip:" + a.String()
	}
	p, err := a.Prefix(max(bits, 0))
	if err != nil {
		return "ip:" + a.String()
	}
	return "ip:" + p.Addr().String() + "/" + strconv.Itoa(p.Bits())
}
