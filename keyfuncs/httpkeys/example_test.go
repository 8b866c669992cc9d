package httpkeys_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"

	"github.com/sluice-go/ratelimit/keyfuncs/httpkeys"
)

// A per-user, per-pattern key on a ServeMux. ServeMux sets r.Pattern as it hands the request
// to the pattern's handler, so the limiting middleware (here a stand-in that prints the key)
// wraps that handler, inside the authentication that stores the user.
func Example() {
	type userKey struct{}
	key := httpkeys.Compose(httpkeys.ContextValue("user", userKey{}), httpkeys.Pattern())

	limit := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Println(key(r))
			next.ServeHTTP(w, r)
		})
	}
	authenticate := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, 42)))
		})
	}
	items := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})

	mux := http.NewServeMux()
	mux.Handle("GET /v1/items/{id}", authenticate(limit(items)))
	mux.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/v1/items/7", nil))
	// Output: user:42|pattern:GET /v1/items/{id} <nil>
}

// Behind a load balancer in 10.0.0.0/8, the client is the address it appended to
// X-Forwarded-For; whatever the client wrote to the left of it is ignored, and so is the
// whole header on a request that did not come through the load balancer.
func ExampleClientIP() {
	key := httpkeys.ClientIP(httpkeys.WithTrustedProxies(netip.MustParsePrefix("10.0.0.0/8")))
	for _, remote := range []string{"10.0.0.2:443", "203.0.113.9:5000"} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = remote
		r.Header.Set("X-Forwarded-For", "6.6.6.6, 198.51.100.7")
		fmt.Println(key(r))
	}
	// Output:
	// ip:198.51.100.7 <nil>
	// ip:203.0.113.9 <nil>
}

// IPv4 clients that reach an IPv6-only service through a NAT64 translator are keyed by
// their IPv4 address, grouped by WithIPv4Prefix; IPv6 clients by their /64.
func ExampleWithIPv4Prefix() {
	key := httpkeys.ClientIP(httpkeys.WithIPv4Prefix(24))
	for _, remote := range []string{"198.51.100.7:1", "[64:ff9b::198.51.100.9]:1", "[2001:db8:1:2::99]:1"} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = remote
		fmt.Println(key(r))
	}
	// Output:
	// ip:198.51.100.0/24 <nil>
	// ip:198.51.100.0/24 <nil>
	// ip:2001:db8:1:2::/64 <nil>
}
