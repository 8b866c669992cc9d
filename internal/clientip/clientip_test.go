package clientip

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
)

func TestParseAddr(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" for not an address
	}{
		{"192.0.2.1", "192.0.2.1"},
		{" 192.0.2.1\t", "192.0.2.1"},
		{"192.0.2.1:8080", "192.0.2.1"},
		{"[2001:db8::1]:443", "2001:db8::1"},
		{"[2001:db8::1]", "2001:db8::1"},
		{"2001:db8::1", "2001:db8::1"},
		{"::ffff:192.0.2.1", "192.0.2.1"},          // unmapped
		{"[::ffff:192.0.2.1]:80", "192.0.2.1"},     // unmapped
		{"fe80::1%eth0", "fe80::1"},                // zone dropped
		{"", ""}, {"unknown", ""}, {"_hidden", ""}, // RFC 7239 obfuscated names are not addresses
		{"192.0.2.1:", ""}, {"[192.0.2.1]", ""}, {"300.0.0.1", ""}, {"@", ""}, {"/tmp/sock", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			a, ok := ParseAddr(tt.in)
			if tt.want == "" {
				assert.False(t, ok)
				return
			}
			require.True(t, ok)
			assert.Equal(t, tt.want, a.String())
		})
	}
}

func TestForwarded(t *testing.T) {
	proxies := NewSet(netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::ffff:172.16.0.0/108"))
	tests := []struct {
		name    string
		peer    string
		lines   []string
		trusted Set
		want    string
	}{
		{"no trusted proxies: header ignored", "203.0.113.9", []string{"198.51.100.1"}, nil, "203.0.113.9"},
		{"untrusted peer: header ignored", "203.0.113.9", []string{"198.51.100.1"}, proxies, "203.0.113.9"},
		{"trusted peer, one hop", "10.0.0.1", []string{"198.51.100.1"}, proxies, "198.51.100.1"},
		// The client prepended a fake address; the proxy appended the real one on the right.
		{"spoofed left entries", "10.0.0.1", []string{"1.1.1.1, 2.2.2.2, 198.51.100.1"}, proxies, "198.51.100.1"},
		{"trusted hops skipped", "10.0.0.1", []string{"1.1.1.1, 198.51.100.1, 10.0.0.7, 10.9.9.9"}, proxies, "198.51.100.1"},
		// Two lines are one list: the walk continues on the line before.
		{"across lines", "10.0.0.1", []string{"1.1.1.1, 198.51.100.1", "10.0.0.7"}, proxies, "198.51.100.1"},
		{"mapped prefix matches", "172.16.0.5", []string{"198.51.100.1"}, proxies, "198.51.100.1"},
		{"mapped entry unmapped", "10.0.0.1", []string{"::ffff:198.51.100.1"}, proxies, "198.51.100.1"},
		{"entry with port", "10.0.0.1", []string{"[2001:db8::5]:1234"}, proxies, "2001:db8::5"},
		{"empty entries skipped", "10.0.0.1", []string{"198.51.100.1,, ", ""}, proxies, "198.51.100.1"},
		// Garbage stops the walk at the last address reached: the trusted proxy.
		{"garbage stops at proxy", "10.0.0.1", []string{"198.51.100.1, bogus"}, proxies, "10.0.0.1"},
		{"garbage after hop", "10.0.0.1", []string{"bogus, 10.0.0.2"}, proxies, "10.0.0.2"},
		{"all trusted: leftmost", "10.0.0.1", []string{"10.0.0.3, 10.0.0.2"}, proxies, "10.0.0.3"},
		{"no header", "10.0.0.1", nil, proxies, "10.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			peer, ok := ParseAddr(tt.peer)
			require.True(t, ok)
			assert.Equal(t, tt.want, Forwarded(peer, tt.lines, tt.trusted).String())
		})
	}
}

func TestKey(t *testing.T) {
	tests := []struct {
		addr   string
		v4, v6 int
		want   string
	}{
		{"192.0.2.7", 32, 64, "ip:192.0.2.7"},
		{"192.0.2.7", 24, 64, "ip:192.0.2.0/24"},
		{"2001:db8:1:2:aaaa::1", 32, 64, "ip:2001:db8:1:2::/64"},
		{"2001:db8:1:2:bbbb::9", 32, 64, "ip:2001:db8:1:2::/64"}, // same /64, same key
		{"2001:db8:1:3::1", 32, 64, "ip:2001:db8:1:3::/64"},
		{"2001:db8:1:2:aaaa::1", 32, 128, "ip:2001:db8:1:2:aaaa::1"},
		{"2001:db8:1:2:aaaa::1", 32, 48, "ip:2001:db8:1::/48"},
		{"::ffff:192.0.2.7", 32, 64, "ip:192.0.2.7"}, // mapped: IPv4 rules
		// IPv4 clients behind a NAT64 or SIIT translator: keyed by the embedded IPv4
		// address, grouped by v4 bits; without this, all of them would share
		// "ip:64:ff9b::/64".
		{"64:ff9b::192.0.2.7", 32, 64, "ip:192.0.2.7"},
		{"64:ff9b::c000:208", 32, 64, "ip:192.0.2.8"}, // the same form, written in hex
		{"64:ff9b::192.0.2.7", 24, 128, "ip:192.0.2.0/24"},
		// local-use /48, a /96 in it
		{"64:ff9b:1:aa:bb:cc:198.51.100.9", 32, 64, "ip:198.51.100.9"},
		{"64:ff9b:1:aa:bb:cc:198.51.100.9", 16, 64, "ip:198.51.0.0/16"},
		// Bits 64 to 71 set: not an RFC 6052 address, so an IPv6 client like any other.
		{"64:ff9b:1:aa:ff00::1", 32, 64, "ip:64:ff9b:1:aa::/64"},
		// Outside the /96 and the /48 by one bit: IPv6 clients.
		{"64:ff9b:0:0:1::c000:207", 32, 64, "ip:64:ff9b::/64"},
		{"64:ff9b:2::c000:207", 32, 64, "ip:64:ff9b:2::/64"},
		{"::192.0.2.7", 32, 64, "ip:192.0.2.7"}, // IPv4-compatible
		{"::192.0.2.7", 8, 64, "ip:192.0.0.0/8"},
		// "::" and "::1" are IPv6 (unspecified and loopback), not 0.0.0.0 and 0.0.0.1.
		{"::", 32, 64, "ip:::/64"},
		{"::1", 32, 64, "ip:::/64"},
		{"::1", 32, 128, "ip:::1"},
		{"::0.255.0.1", 32, 128, "ip:::ff:1"}, // in ::/104: IPv6
		{"::1.0.0.0", 32, 64, "ip:1.0.0.0"},   // just past it: IPv4-compatible
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			assert.Equal(t, tt.want, Key(netip.MustParseAddr(tt.addr), tt.v4, tt.v6))
		})
	}
	assert.Equal(t, "ip:invalid", Key(netip.Addr{}, 32, 64))
}

func TestEmbedded(t *testing.T) {
	for in, want := range map[string]string{
		"64:ff9b::198.51.100.1":   "198.51.100.1",
		"64:ff9b:1::198.51.100.1": "198.51.100.1",
		// any /96 inside 64:ff9b:1::/48 whose bits 64-71 are zero
		"64:ff9b:1:ffff:ff:ffff:1.2.3.4": "1.2.3.4",
		"::198.51.100.1":                 "198.51.100.1",
		"::255.255.255.255":              "255.255.255.255",
		"::":                             "",
		"::1":                            "",
		"::ff:ffff":                      "", // ::0.255.255.255
		"::ffff:198.51.100.1":            "", // mapped: Normalize's business
		"198.51.100.1":                   "",
		"2001:db8::198.51.100.1":         "",
		"64:ff9b:1:0:100::1":             "", // u octet (bits 64-71) not zero
		"fe80::198.51.100.1%eth0":        "",
	} {
		t.Run(in, func(t *testing.T) {
			v4, ok := Embedded(netip.MustParseAddr(in))
			if want == "" {
				assert.False(t, ok)
				return
			}
			require.True(t, ok)
			assert.Equal(t, want, v4.String())
		})
	}
}

func TestOptions(t *testing.T) {
	o := DefaultOptions()
	require.NoError(t, o.Validate("pkg"))
	o.IPv4Bits = 33
	assert.EqualError(t, o.Validate("pkg"), "pkg: WithIPv4Prefix(33): bits must be between 0 and 32")
	o.IPv4Bits, o.IPv6Bits = 32, -1
	assert.EqualError(t, o.Validate("pkg"), "pkg: WithIPv6Prefix(-1): bits must be between 0 and 128")

	// The error names the problem, never the remote address, which may hold a client's data.
	o = DefaultOptions()
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "alice@example.com"
	_, err := o.RequestKey(r)
	require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
	assert.EqualError(t, err, "ratelimit: empty key: remote address is not an IP address")

	o.Trust(netip.MustParsePrefix("10.0.0.0/8"), netip.Prefix{})
	o.AddPlatform("CF-Connecting-IP", netip.MustParsePrefix("173.245.48.0/20"))
	assert.Equal(t, Set{netip.MustParsePrefix("10.0.0.0/8")}, o.Trusted, "invalid prefix dropped")
	r.RemoteAddr = "10.0.0.1:443"
	r.Header.Set("X-Forwarded-For", "173.245.48.1")
	r.Header.Set("CF-Connecting-IP", "64:ff9b::203.0.113.5")
	key, err := o.RequestKey(r)
	require.NoError(t, err)
	// Proxy → Cloudflare's edge → the platform header, an IPv4 client behind NAT64.
	assert.Equal(t, "ip:203.0.113.5", key)
}

// FuzzForwarded checks the walk's invariants on any header: it never panics; it returns the
// peer itself when the peer is not trusted; otherwise it returns the peer or an address
// written in the header.
func FuzzForwarded(f *testing.F) {
	f.Add("10.0.0.1", "1.1.1.1, 198.51.100.1, 10.0.0.7", "")
	f.Add("10.0.0.1", "bogus, [2001:db8::1]:80", "::ffff:10.0.0.2")
	f.Add("203.0.113.9", "10.0.0.1", ",,,")
	f.Add("10.0.0.1", "\x00,\xff, ,", "10.0.0.1")
	trusted := NewSet(netip.MustParsePrefix("10.0.0.0/8"))
	f.Fuzz(func(t *testing.T, peerStr, line1, line2 string) {
		peer, ok := ParseAddr(peerStr)
		if !ok {
			return
		}
		got := Forwarded(peer, []string{line1, line2}, trusted)
		require.True(t, got.IsValid())
		if !trusted.Contains(peer) {
			require.Equal(t, peer, got)
			return
		}
		if got == peer {
			return
		}
		require.True(t, written(got, line1+","+line2),
			"%v is neither the peer nor in the header", got)
	})
}

// written reports whether some entry of the comma-separated list parses to a.
func written(a netip.Addr, list string) bool {
	for _, e := range strings.Split(list, ",") {
		if b, ok := ParseAddr(e); ok && b == a {
			return true
		}
	}
	return false
}

// TestRequestKeyParts: when RequestKeyParts gives parts, they are "ip:" and RemoteAddr's
// host, and they make RequestKey's key; it gives none, so that the caller builds the key,
// when RemoteAddr writes the client otherwise than the key does, when the key is a prefix,
// when the client comes from a header, and when RemoteAddr is no address. Parts cost no
// allocation.
func TestRequestKeyParts(t *testing.T) {
	proxied := DefaultOptions()
	proxied.Trust(netip.MustParsePrefix("10.0.0.0/8"))
	v4Prefix := DefaultOptions()
	v4Prefix.IPv4Bits = 24
	v6Whole := DefaultOptions()
	v6Whole.IPv6Bits = 128
	tests := []struct {
		name   string
		o      Options
		remote string
		xff    string
		value  string // "" when there are no parts
	}{
		{"ipv4", DefaultOptions(), "192.0.2.1:40000", "", "192.0.2.1"},
		{"ipv6, /64 by default", DefaultOptions(), "[2001:db8::1]:40000", "", ""},
		{"ipv6, whole", v6Whole, "[2001:db8::1]:40000", "", "2001:db8::1"},
		{"ipv6, not canonical", v6Whole, "[2001:DB8:0::1]:40000", "", ""},
		{"ipv4-mapped", DefaultOptions(), "[::ffff:192.0.2.1]:40000", "", ""},
		{"nat64", DefaultOptions(), "[64:ff9b::192.0.2.1]:40000", "", ""},
		{"zone", DefaultOptions(), "[fe80::1%eth0]:40000", "", ""},
		{"ipv4 prefix", v4Prefix, "192.0.2.1:40000", "", ""},
		{"no port", DefaultOptions(), "192.0.2.1", "", "192.0.2.1"},
		{"forwarded", proxied, "10.0.0.1:443", "198.51.100.7", ""},
		{"proxy alone", proxied, "10.0.0.1:443", "", "10.0.0.1"},
		{"not an address", DefaultOptions(), "alice@example.com", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = tt.remote
			if tt.xff != "" {
				r.Header.Set("X-Forwarded-For", tt.xff)
			}
			prefix, value, ok := tt.o.RequestKeyParts(r)
			assert.Equal(t, tt.value != "", ok)
			if ok {
				assert.Equal(t, "ip:", prefix)
				assert.Equal(t, tt.value, value)
				key, err := tt.o.RequestKey(r)
				require.NoError(t, err)
				assert.Equal(t, key, prefix+value)
				assert.Zero(t, testing.AllocsPerRun(100, func() { tt.o.RequestKeyParts(r) }))
			}
		})
	}
}
