// Package clientip finds the address of the client behind a request and turns it into a
// rate-limit key: parsing socket and X-Forwarded-For addresses with net/netip, walking the
// X-Forwarded-For chain past trusted proxies, and grouping addresses into prefixes. It is
// shared by keyfuncs (Gin), keyfuncs/httpkeys (net/http) and keyfuncs/grpckeys (gRPC), whose
// IP options all wrap Options.
//
// Nothing here panics on malformed input: a value that is not an address is reported with
// ok == false, and the walk stops at it.
package clientip

import (
	"net/netip"
	"strconv"
	"strings"

	"github.com/sluice-go/ratelimit/internal/keypart"
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
	if strings.Count(s, ":") == 1 || strings.HasPrefix(s, "[") {
		// An address with its port, as Request.RemoteAddr has it: read as one first, since
		// a failed ParseAddr allocates its error.
		if ap, err := netip.ParseAddrPort(s); err == nil {
			return Normalize(ap.Addr()), true
		}
	}
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
// "ip:192.0.2.7", "ip:2001:db8:1:2::/64". An IPv6 address that embeds an IPv4 client (see
// Embedded) is keyed as that IPv4 address, by v4Bits. An invalid address gives
// "ip:invalid"; callers check validity first.
func Key(a netip.Addr, v4Bits, v6Bits int) string {
	a = Normalize(a)
	if v4, ok := Embedded(a); ok {
		a = v4
	}
	bits := v6Bits
	if a.Is4() {
		bits = v4Bits
	}
	switch {
	case !a.IsValid():
		return keypart.Label("ip", "invalid")
	case bits >= a.BitLen() && a.Zone() == "":
		// "ip:" and the address in one allocation: an address without a zone holds none of
		// the characters Label escapes.
		var buf [len("ip:") + maxAddrLen]byte
		return string(a.AppendTo(append(buf[:0], "ip:"...)))
	case bits >= a.BitLen():
		return keypart.Label("ip", a.String())
	}
	p, err := a.Prefix(max(bits, 0))
	if err != nil {
		return keypart.Label("ip", a.String())
	}
	return keypart.Label("ip", p.Addr().String()+"/"+strconv.Itoa(p.Bits()))
}

// maxAddrLen is the length of the longest text of an address without a zone.
const maxAddrLen = len("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255")

// KeyParts returns Key(a, v4Bits, v6Bits) as "ip:" and a value that is text, a's text as
// some input wrote it (Request.RemoteAddr's host, say), without allocating: ok is false
// when the key is not "ip:" + text (text is not a's canonical form, or the key is a prefix,
// or a has a zone), for the caller to use Key.
func KeyParts(a netip.Addr, v4Bits, v6Bits int, text string) (prefix, value string, ok bool) {
	a = Normalize(a)
	if v4, ok := Embedded(a); ok {
		a = v4
	}
	bits := v6Bits
	if a.Is4() {
		bits = v4Bits
	}
	if !a.IsValid() || bits < a.BitLen() || a.Zone() != "" || len(text) > maxAddrLen {
		return "", "", false
	}
	var buf [maxAddrLen]byte
	if string(a.AppendTo(buf[:0])) != text {
		return "", "", false
	}
	return "ip:", text, true
}

// Embedded returns the IPv4 address carried in the last 32 bits of an IPv6 address that
// stands for an IPv4 client:
//
//   - 64:ff9b::/96, the NAT64 well-known prefix (RFC 6052), and 64:ff9b:1::/48, the prefix
//     for local translators (RFC 8215), through which IPv4 clients reach an IPv6-only
//     service (SIIT, NAT64). Inside 64:ff9b:1::/48 the IPv4 address is read as a /96
//     translation prefix places it, and bits 64 to 71, which RFC 6052 keeps zero, must be
//     zero;
//   - ::a.b.c.d, an IPv4-compatible address (RFC 4291, deprecated but still seen), when a
//     is not 0: "::" (unspecified), "::1" (loopback) and the rest of ::/104 are IPv6
//     addresses, not IPv4 clients.
//
// Every other address, IPv4-mapped ones included (Normalize unmaps those), gives ok == false.
func Embedded(a netip.Addr) (v4 netip.Addr, ok bool) {
	if !a.Is6() || a.Is4In6() {
		return netip.Addr{}, false
	}
	b := a.As16()
	last := netip.AddrFrom4([4]byte(b[12:]))
	switch {
	case zero(b[4:12]) && b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b: // 64:ff9b::/96
		return last, true
	case b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && b[4] == 0 && b[5] == 1 && b[8] == 0: // 64:ff9b:1::/48
		return last, true
	case zero(b[:12]) && b[12] != 0: // ::a.b.c.d
		return last, true
	}
	return netip.Addr{}, false
}

// zero reports whether every byte of b is 0.
func zero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
