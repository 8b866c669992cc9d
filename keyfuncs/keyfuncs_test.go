package keyfuncs_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/keypart"
	"github.com/sluice-go/ratelimit/keyfuncs"
)

func TestMain(m *testing.M) {
	gin.SetMode(gin.TestMode)
	m.Run()
}

// newRouter returns an engine whose routes answer with the key f finds, or with "error: "
// and the error. setUser, when not nil, runs first and may c.Set values.
func newRouter(f keyfuncs.Func, setUser gin.HandlerFunc) *gin.Engine {
	r := gin.New()
	if setUser != nil {
		r.Use(setUser)
	}
	answer := func(c *gin.Context) {
		key, err := f(c)
		if err != nil {
			if !errors.Is(err, ratelimit.ErrInvalidArgument) {
				c.String(http.StatusInternalServerError, "error does not wrap ErrKeyEmpty: %v", err)
				return
			}
			c.String(http.StatusOK, "error: %v", err)
			return
		}
		c.String(http.StatusOK, "%s", key)
	}
	r.Any("/v1/items/:id", answer)
	r.NoRoute(answer)
	return r
}

// key sends a request from remoteAddr with the given header lines ("Name", "value", ...) and
// returns the body: the key, or "error: ...".
func key(t *testing.T, r http.Handler, method, path, remoteAddr string, header ...string) string {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	req.RemoteAddr = remoteAddr
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	return w.Body.String()
}

var (
	proxies    = keyfuncs.WithTrustedProxies(netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8"))
	cloudflare = keyfuncs.WithPlatformHeader("CF-Connecting-IP", netip.MustParsePrefix("173.245.48.0/20"))
)

func TestClientIP(t *testing.T) {
	tests := []struct {
		name   string
		opts   []keyfuncs.IPOption
		remote string
		header []string
		want   string
	}{
		{"peer", nil, "203.0.113.9:5555", nil, "ip:203.0.113.9"},
		// No proxies trusted: spoofing headers are ignored.
		{"xff ignored by default", nil, "203.0.113.9:5555",
			[]string{"X-Forwarded-For", "198.51.100.1", "X-Real-IP", "198.51.100.2", "CF-Connecting-IP", "198.51.100.3"},
			"ip:203.0.113.9"},
		{"xff ignored from untrusted peer", []keyfuncs.IPOption{proxies}, "203.0.113.9:5555",
			[]string{"X-Forwarded-For", "198.51.100.1"}, "ip:203.0.113.9"},
		{"xff from trusted proxy", []keyfuncs.IPOption{proxies}, "10.1.2.3:5555",
			[]string{"X-Forwarded-For", "1.1.1.1, 198.51.100.1"}, "ip:198.51.100.1"},
		{"xff over two lines, trusted hops skipped", []keyfuncs.IPOption{proxies}, "10.1.2.3:5555",
			[]string{"X-Forwarded-For", "1.1.1.1, 198.51.100.1", "X-Forwarded-For", "10.0.0.9"}, "ip:198.51.100.1"},
		{"ipv6 proxy", []keyfuncs.IPOption{proxies}, "[fd00::1]:443",
			[]string{"X-Forwarded-For", "2001:db8:1:2::77"}, "ip:2001:db8:1:2::/64"},
		{"platform header from platform", []keyfuncs.IPOption{cloudflare}, "173.245.48.1:443",
			[]string{"CF-Connecting-IP", "198.51.100.7"}, "ip:198.51.100.7"},
		{"platform header from elsewhere", []keyfuncs.IPOption{cloudflare}, "203.0.113.9:443",
			[]string{"CF-Connecting-IP", "198.51.100.7"}, "ip:203.0.113.9"},
		// Cloudflare → our proxy → us: the hop before our proxy is Cloudflare's.
		{"platform behind proxy", []keyfuncs.IPOption{proxies, cloudflare}, "10.1.2.3:443",
			[]string{"X-Forwarded-For", "173.245.48.1", "CF-Connecting-IP", "198.51.100.7"}, "ip:198.51.100.7"},
		{"platform header malformed", []keyfuncs.IPOption{cloudflare}, "173.245.48.1:443",
			[]string{"CF-Connecting-IP", "198.51.100.7, 1.1.1.1"}, "ip:173.245.48.1"},
		{"ipv6 grouped by /64", nil, "[2001:db8:1:2:aaaa::1]:443", nil, "ip:2001:db8:1:2::/64"},
		{"ipv6 per address", []keyfuncs.IPOption{keyfuncs.WithIPv6Prefix(128)}, "[2001:db8:1:2:aaaa::1]:443", nil,
			"ip:2001:db8:1:2:aaaa::1"},
		{"ipv4 by /24", []keyfuncs.IPOption{keyfuncs.WithIPv4Prefix(24)}, "192.0.2.77:1", nil, "ip:192.0.2.0/24"},
		{"mapped ipv4 peer", nil, "[::ffff:192.0.2.1]:80", nil, "ip:192.0.2.1"},
		// IPv4 clients through a NAT64 translator: keyed by their IPv4 address.
		{"nat64 peer", nil, "[64:ff9b::198.51.100.7]:443", nil, "ip:198.51.100.7"},
		{"nat64 client behind proxy, by /24", []keyfuncs.IPOption{proxies, keyfuncs.WithIPv4Prefix(24)}, "10.1.2.3:443",
			[]string{"X-Forwarded-For", "64:ff9b::198.51.100.7"}, "ip:198.51.100.0/24"},
		// The remote address is not repeated in the error: whatever set it may have put a
		// client's data there.
		{"unix socket peer", nil, "@", nil, "error: ratelimit: empty key: remote address is not an IP address"},
		{"empty peer", nil, "", nil, "error: ratelimit: empty key: remote address is not an IP address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRouter(keyfuncs.ClientIP(tt.opts...), nil)
			assert.Equal(t, tt.want, key(t, r, http.MethodGet, "/v1/items/1", tt.remote, tt.header...))
		})
	}
}

func TestClientIPGinOptIn(t *testing.T) {
	r := newRouter(keyfuncs.ClientIP(keyfuncs.WithGinClientIP()), nil)
	// With gin's defaults every proxy is trusted: the header wins. This is why it is opt-in.
	assert.Equal(t, "ip:198.51.100.1",
		key(t, r, http.MethodGet, "/v1/items/1", "203.0.113.9:1", "X-Forwarded-For", "198.51.100.1"))
	require.NoError(t, r.SetTrustedProxies([]string{"10.0.0.0/8"}))
	assert.Equal(t, "ip:203.0.113.9",
		key(t, r, http.MethodGet, "/v1/items/1", "203.0.113.9:1", "X-Forwarded-For", "198.51.100.1"))
}

// gin's ClientIP can return a platform header as the client sent it: the error does not
// repeat it.
func TestClientIPGinNotAnAddress(t *testing.T) {
	r := newRouter(keyfuncs.ClientIP(keyfuncs.WithGinClientIP()), nil)
	r.TrustedPlatform = "X-Client"
	assert.Equal(t, "error: ratelimit: empty key: gin's ClientIP is not an IP address",
		key(t, r, http.MethodGet, "/v1/items/1", "203.0.113.9:1", "X-Client", "alice@example.com"))
}

// A nil IPOption is skipped, as a nil option is everywhere in the kit.
func TestClientIPNilOption(t *testing.T) {
	r := newRouter(keyfuncs.ClientIP(nil, keyfuncs.WithIPv4Prefix(24), nil), nil)
	assert.Equal(t, "ip:192.0.2.0/24", key(t, r, http.MethodGet, "/v1/items/1", "192.0.2.77:1"))
	r = newRouter(keyfuncs.ClientIP(nil, keyfuncs.WithGinClientIP()), nil)
	assert.Equal(t, "ip:192.0.2.77", key(t, r, http.MethodGet, "/v1/items/1", "192.0.2.77:1"))
}

// No key is longer than args.MaxKeyLen, however long the values the client sends.
func TestKeysAreBounded(t *testing.T) {
	f := keyfuncs.Compose(keyfuncs.Header("X-A"), keyfuncs.Header("X-B"), keyfuncs.Header("X-C"), keyfuncs.Route())
	long := strings.Repeat("|", keypart.MaxValueLen) // kept, as "%7C" × 128
	got := key(t, newRouter(f, nil), http.MethodGet, "/v1/items/1", "192.0.2.1:1", "X-A", long, "X-B", long, "X-C", long)
	// Each header part is "x-a:" + "%7C" × 128 (388 bytes), "x-a:" + "%257C" × 128 once
	// Compose escapes it; with "route:/v1/items/:id" the joined text takes 1954 bytes, so
	// the key is its SHA-256: base64url of the first 16 bytes, from Python's hashlib.
	assert.Equal(t, "h:#nfQ7G6oo9NZjZO6_EU-uzw", got)
}

func TestClientIPPanicsOnBadPrefix(t *testing.T) {
	assert.PanicsWithValue(t, "keyfuncs: WithIPv6Prefix(129): bits must be between 0 and 128",
		func() { keyfuncs.ClientIP(keyfuncs.WithIPv6Prefix(129)) })
	assert.PanicsWithValue(t, "keyfuncs: WithIPv4Prefix(-1): bits must be between 0 and 32",
		func() { keyfuncs.ClientIP(keyfuncs.WithIPv4Prefix(-1)) })
}

type userID int

func (u userID) String() string { return fmt.Sprintf("u%d", int(u)) }

func TestValues(t *testing.T) {
	set := func(k string, v any) gin.HandlerFunc { return func(c *gin.Context) { c.Set(k, v) } }
	const peer = "192.0.2.1:1"
	tests := []struct {
		name   string
		f      keyfuncs.Func
		set    gin.HandlerFunc
		method string
		path   string
		header []string
		want   string
	}{
		{"header", keyfuncs.Header("X-API-Key"), nil, "GET", "/v1/items/1", []string{"X-API-Key", " abc "}, "x-api-key:abc"},
		{"header missing", keyfuncs.Header("X-API-Key"), nil, "GET", "/v1/items/1", nil,
			"error: ratelimit: empty key: header X-API-Key is missing or blank"},
		// A value that is the text of a long value's digest keeps a bucket of its own.
		{"header long", keyfuncs.Header("X-API-Key"), nil, "GET", "/v1/items/1",
			[]string{"X-API-Key", strings.Repeat("k", 129)},
			// sha256("k" × 129)[:16], Python's hashlib
			"x-api-key:#sha256:9094034fb2d0ce2e407c9b260f2806ab"},
		{"header digest text", keyfuncs.Header("X-API-Key"), nil, "GET", "/v1/items/1",
			[]string{"X-API-Key", "#sha256:9094034fb2d0ce2e407c9b260f2806ab"},
			"x-api-key:%23sha256:9094034fb2d0ce2e407c9b260f2806ab"},
		{"context string", keyfuncs.ContextValue("user"), set("user", "alice"), "GET", "/v1/items/1", nil, "user:alice"},
		{"context int", keyfuncs.ContextValue("user"), set("user", 42), "GET", "/v1/items/1", nil, "user:42"},
		{"context stringer", keyfuncs.ContextValue("user"), set("user", userID(7)), "GET", "/v1/items/1", nil, "user:u7"},
		{"context missing", keyfuncs.ContextValue("user"), nil, "GET", "/v1/items/1", nil,
			`error: ratelimit: empty key: gin context value "user" is missing`},
		{"context pointer refused", keyfuncs.ContextValue("user"), set("user", &struct{}{}), "GET", "/v1/items/1", nil,
			`error: ratelimit: empty key: gin context value "user": value of type *struct {} cannot be a key: use a string, an integer or a fmt.Stringer`},
		{"context empty", keyfuncs.ContextValue("user"), set("user", ""), "GET", "/v1/items/1", nil,
			`error: ratelimit: empty key: gin context value "user" is empty`},
		{"route template, not path", keyfuncs.Route(), nil, "GET", "/v1/items/12345", nil, "route:/v1/items/:id"},
		{"route unmatched", keyfuncs.Route(), nil, "GET", "/random/path", nil, "route:(unmatched)"},
		{"method", keyfuncs.Method(), nil, "PATCH", "/v1/items/1", nil, "method:PATCH"},
		{"method unknown", keyfuncs.Method(), nil, "BREW", "/v1/items/1", nil, "method:OTHER"},
		{"compose", keyfuncs.Compose(keyfuncs.ContextValue("user"), keyfuncs.Route()), set("user", 42),
			"GET", "/v1/items/9", nil, "user:42|route:/v1/items/:id"},
		// Label escapes the '|' ("x-tenant:a%7Cmethod:PUT"), and Compose escapes that part's
		// '%' once more, so the part reads back as it was.
		{"compose escapes", keyfuncs.Compose(keyfuncs.Header("X-Tenant"), keyfuncs.Method()), nil,
			"GET", "/v1/items/9", []string{"X-Tenant", "a|method:PUT"}, "x-tenant:a%257Cmethod:PUT|method:GET"},
		{"compose fails with a part", keyfuncs.Compose(keyfuncs.Route(), keyfuncs.ContextValue("user")), nil,
			"GET", "/v1/items/9", nil, `error: ratelimit: empty key: gin context value "user" is missing`},
		{"compose of one", keyfuncs.Compose(keyfuncs.Method()), nil, "GET", "/v1/items/9", nil, "method:GET"},
		{"hashed", keyfuncs.Hashed([]byte("k"), keyfuncs.ClientIP()), nil, "GET", "/v1/items/1", nil,
			// base64url(HMAC-SHA256("k", "ip:192.0.2.1")[:16]), checked with Python's hmac
			"h:#avoJEoIKCspjgRPYJH1IFA"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRouter(tt.f, tt.set)
			assert.Equal(t, tt.want, key(t, r, tt.method, tt.path, peer, tt.header...))
		})
	}
}

func TestComposePanics(t *testing.T) {
	assert.PanicsWithValue(t, "keyfuncs: Compose needs at least one Func", func() { keyfuncs.Compose() })
	assert.PanicsWithValue(t, "keyfuncs: Compose: Func 1 is nil", func() { keyfuncs.Compose(keyfuncs.Route(), nil) })
	assert.PanicsWithValue(t, "keyfuncs: Hashed: nil Func", func() { keyfuncs.Hashed(nil, nil) })
}
