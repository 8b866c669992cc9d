package httpkeys_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit/keyfuncs/httpkeys"
)

// serve starts a real HTTP server on a loopback listener (network "tcp4" or "tcp6", address
// "127.0.0.1:0" or "[::1]:0") that answers each path in funcs with the key its Func finds.
// It skips the test when the address cannot be bound (a host without IPv6).
func serve(t *testing.T, network, addr string, funcs map[string]httpkeys.Func) *httptest.Server {
	t.Helper()
	lis, err := net.Listen(network, addr)
	if err != nil {
		t.Skipf("no %s loopback: %v", network, err)
	}
	mux := http.NewServeMux()
	for path, f := range funcs {
		mux.Handle(path, answer(f))
	}
	srv := httptest.NewUnstartedServer(mux)
	srv.Listener.Close()
	srv.Listener = lis
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// get sends GET srv.URL+path with the given header lines ("Name", "value", ...) and returns
// the body: the key, or "error: ...".
func get(t *testing.T, srv *httptest.Server, path string, header ...string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	return string(body)
}

// ClientIP over real connections from 127.0.0.1: the socket peer is the client unless the
// peer is a trusted proxy; X-Forwarded-For and platform headers are read only then.
func TestClientIPOverLoopback(t *testing.T) {
	loopback := netip.MustParsePrefix("127.0.0.0/8")
	srv := serve(t, "tcp4", "127.0.0.1:0", map[string]httpkeys.Func{
		"/default":   httpkeys.ClientIP(),
		"/proxied":   httpkeys.ClientIP(httpkeys.WithTrustedProxies(loopback)),
		"/elsewhere": httpkeys.ClientIP(httpkeys.WithTrustedProxies(netip.MustParsePrefix("10.0.0.0/8"))),
		"/platform":  httpkeys.ClientIP(httpkeys.WithPlatformHeader("CF-Connecting-IP", loopback)),
		"/by24":      httpkeys.ClientIP(nil, httpkeys.WithTrustedProxies(loopback), nil, httpkeys.WithIPv4Prefix(24)),
	})
	spoof := []string{"X-Forwarded-For", "6.6.6.6, 198.51.100.7", "CF-Connecting-IP", "198.51.100.8"}
	tests := []struct {
		name, path string
		header     []string
		want       string
	}{
		{"socket peer", "/default", nil, "ip:127.0.0.1"},
		// No proxy trusted: the headers are the client's own words, and ignored.
		{"headers ignored by default", "/default", spoof, "ip:127.0.0.1"},
		// The peer is trusted: the walk from the right stops at 198.51.100.7, the address
		// the proxy appended; 6.6.6.6, written by the client, is never reached.
		{"xff from a trusted proxy", "/proxied", spoof, "ip:198.51.100.7"},
		{"xff over two lines", "/proxied", []string{"X-Forwarded-For", "6.6.6.6, 198.51.100.7", "X-Forwarded-For", "127.0.0.9"},
			"ip:198.51.100.7"},
		{"trusted, no header", "/proxied", nil, "ip:127.0.0.1"},
		// Proxies are trusted, but the peer is not one of them.
		{"xff from an untrusted peer", "/elsewhere", spoof, "ip:127.0.0.1"},
		{"platform header from the platform", "/platform", spoof, "ip:198.51.100.8"},
		// An IPv4 client behind a NAT64 translator, grouped by its IPv4 /24; a nil option skipped.
		{"nat64 client by /24", "/by24", []string{"X-Forwarded-For", "64:ff9b::198.51.100.7"}, "ip:198.51.100.0/24"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, get(t, srv, tt.path, tt.header...))
		})
	}
}

// Over IPv6 loopback: ::1 is an IPv6 client, not the IPv4-compatible 0.0.0.1, so it is
// grouped by /64 ("::/64") like any IPv6 client, or keyed as "::1" with a /128.
func TestClientIPOverIPv6Loopback(t *testing.T) {
	srv := serve(t, "tcp6", "[::1]:0", map[string]httpkeys.Func{
		"/default": httpkeys.ClientIP(),
		"/by128":   httpkeys.ClientIP(httpkeys.WithIPv6Prefix(128)),
		"/proxied": httpkeys.ClientIP(httpkeys.WithTrustedProxies(netip.MustParsePrefix("::1/128"))),
	})
	assert.Equal(t, "ip:::/64", get(t, srv, "/default", "X-Forwarded-For", "198.51.100.7"))
	assert.Equal(t, "ip:::1", get(t, srv, "/by128"))
	assert.Equal(t, "ip:2001:db8:1:2::/64", get(t, srv, "/proxied", "X-Forwarded-For", "2001:db8:1:2::99"))
}

// A request whose RemoteAddr is not an IP address (a Unix socket's, or one a middleware
// rewrote) fails without repeating it.
func TestClientIPNotAnAddress(t *testing.T) {
	for _, remote := range []string{"", "@", "alice@example.com"} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = remote
		assert.Equal(t, "error: ratelimit: empty key: remote address is not an IP address",
			keyOf(t, httpkeys.ClientIP(), "/", req), "%q", remote)
	}
}
