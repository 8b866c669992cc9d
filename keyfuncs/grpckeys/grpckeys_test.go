package grpckeys_test

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/test/bufconn"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/keyfuncs/grpckeys"
)

// fromPeer returns a context whose peer address is a.
func fromPeer(a net.Addr) context.Context {
	return peer.NewContext(context.Background(), &peer.Peer{Addr: a})
}

// panicky is an address type whose methods fail on a nil receiver.
type panicky struct{ s string }

func (p *panicky) Network() string { return "panicky" + p.s[:0] }
func (p *panicky) String() string  { return p.s }

// bufconnAddr returns the address of a real in-memory connection, as gRPC tests see it.
func bufconnAddr(t *testing.T) net.Addr {
	lis := bufconn.Listen(1 << 10)
	t.Cleanup(func() { lis.Close() })
	return lis.Addr()
}

func TestPeerIP(t *testing.T) {
	tests := []struct {
		name string
		ctx  context.Context
		opts []grpckeys.IPOption
		want string // key, or error text after "ratelimit: empty key: "
		err  bool
	}{
		{"tcp v4", fromPeer(&net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 5}), nil, "ip:192.0.2.7", false},
		{"tcp mapped", fromPeer(&net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.7")}), nil, "ip:192.0.2.7", false},
		{"tcp v6 grouped", fromPeer(&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2::9")}), nil, "ip:2001:db8:1:2::/64", false},
		{"tcp v6 per address", fromPeer(&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2::9")}),
			[]grpckeys.IPOption{grpckeys.WithIPv6Prefix(128)}, "ip:2001:db8:1:2::9", false},
		// An IPv4 client through a NAT64 translator, or with an IPv4-compatible address: its
		// IPv4 address, grouped by the IPv4 prefix.
		{"nat64", fromPeer(&net.TCPAddr{IP: net.ParseIP("64:ff9b::192.0.2.7")}), nil, "ip:192.0.2.7", false},
		{"nat64 by /24", fromPeer(&net.TCPAddr{IP: net.ParseIP("64:ff9b::192.0.2.7")}),
			[]grpckeys.IPOption{grpckeys.WithIPv4Prefix(24)}, "ip:192.0.2.0/24", false},
		{"ipv4-compatible", fromPeer(&net.TCPAddr{IP: net.ParseIP("::192.0.2.7")}), nil, "ip:192.0.2.7", false},
		// Loopback is IPv6, not the IPv4-compatible 0.0.0.1: grouped by /64 as IPv6 is.
		{"ipv6 loopback", fromPeer(&net.TCPAddr{IP: net.IPv6loopback}), nil, "ip:::/64", false},
		{"nil options skipped", fromPeer(&net.TCPAddr{IP: net.ParseIP("198.51.100.1")}),
			[]grpckeys.IPOption{nil, grpckeys.WithIPv4Prefix(16), nil}, "ip:198.51.0.0/16", false},
		{"udp", fromPeer(&net.UDPAddr{IP: net.ParseIP("198.51.100.1")}),
			[]grpckeys.IPOption{grpckeys.WithIPv4Prefix(16)}, "ip:198.51.0.0/16", false},
		{"other type parsed", fromPeer(&panicky{"192.0.2.8:99"}), nil, "ip:192.0.2.8", false},
		{"no peer", context.Background(), nil, "no gRPC peer in the context", true},
		{"nil addr", fromPeer(nil), nil, "no gRPC peer in the context", true},
		// Errors name the peer's network, never its address, which may be a client's.
		{"nil tcp addr", fromPeer((*net.TCPAddr)(nil)), nil, `gRPC peer "tcp" is not an IP address`, true},
		{"unix socket", fromPeer(&net.UnixAddr{Name: "/home/alice/app.sock", Net: "unix"}), nil,
			`gRPC peer "unix" is not an IP address`, true},
		{"bufconn", fromPeer(bufconnAddr(t)), nil, `gRPC peer "bufconn" is not an IP address`, true},
		{"other type, not an address", fromPeer(&panicky{"alice@example.com"}), nil,
			`gRPC peer "panicky" is not an IP address`, true},
		{"typed nil that panics", fromPeer((*panicky)(nil)), nil,
			"gRPC peer of type *grpckeys_test.panicky is not an IP address", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := grpckeys.PeerIP(tt.opts...)(tt.ctx, "/pkg.Svc/Get")
			if tt.err {
				require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
				assert.Equal(t, "ratelimit: empty key: "+tt.want, err.Error())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

type userKey struct{}

func TestValues(t *testing.T) {
	md := metadata.Pairs("x-api-key", " ", "X-API-Key", "abc", "x-tenant", "a|b")
	ctx := metadata.NewIncomingContext(context.WithValue(context.Background(), userKey{}, 42), md)
	tests := []struct {
		name string
		f    grpckeys.Func
		ctx  context.Context
		want string
	}{
		{"metadata skips blank values", grpckeys.Metadata("X-API-Key"), ctx, "x-api-key:abc"},
		{"metadata missing", grpckeys.Metadata("x-other"), ctx, "error: ratelimit: empty key: metadata x-other is missing or blank"},
		{"metadata without any", grpckeys.Metadata("x-api-key"), context.Background(),
			"error: ratelimit: empty key: metadata x-api-key is missing or blank"},
		{"context value", grpckeys.ContextValue("user", userKey{}), ctx, "user:42"},
		{"context value missing", grpckeys.ContextValue("user", userKey{}), context.Background(),
			"error: ratelimit: empty key: context value user is missing"},
		{"full method", grpckeys.FullMethod(), ctx, "rpc:/pkg.Svc/Get"},
		{"compose", grpckeys.Compose(grpckeys.ContextValue("user", userKey{}), grpckeys.FullMethod()), ctx,
			"user:42|rpc:/pkg.Svc/Get"},
		// Label escapes the '|' ("x-tenant:a%7Cb"); Compose escapes that part's '%' again.
		{"compose escapes", grpckeys.Compose(grpckeys.Metadata("x-tenant"), grpckeys.FullMethod()), ctx,
			"x-tenant:a%257Cb|rpc:/pkg.Svc/Get"},
		{"compose fails with a part", grpckeys.Compose(grpckeys.FullMethod(), grpckeys.Metadata("x-other")), ctx,
			"error: ratelimit: empty key: metadata x-other is missing or blank"},
		// Same value as keyfuncs.Hashed([]byte("k"), ...) for "ip:192.0.2.1":
		// base64url(HMAC-SHA256("k", "ip:192.0.2.1")[:16]), from Python's hmac.
		{"hashed", grpckeys.Hashed([]byte("k"), grpckeys.PeerIP()),
			fromPeer(&net.TCPAddr{IP: net.ParseIP("192.0.2.1")}), "h:#avoJEoIKCspjgRPYJH1IFA"},
		{"hashed fails with f", grpckeys.Hashed([]byte("k"), grpckeys.PeerIP()), ctx,
			"error: ratelimit: empty key: no gRPC peer in the context"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.f(tt.ctx, "/pkg.Svc/Get")
			if err != nil {
				require.True(t, errors.Is(err, ratelimit.ErrInvalidArgument))
				got = "error: " + err.Error()
			}
			assert.Equal(t, tt.want, got)
		})
	}
	_, err := grpckeys.FullMethod()(ctx, "")
	assert.EqualError(t, err, "ratelimit: empty key: empty gRPC method name")
}

func TestPanics(t *testing.T) {
	assert.PanicsWithValue(t, "grpckeys: WithIPv6Prefix(200): bits must be between 0 and 128",
		func() { grpckeys.PeerIP(grpckeys.WithIPv6Prefix(200)) })
	assert.PanicsWithValue(t, "grpckeys: Compose needs at least one Func", func() { grpckeys.Compose() })
	assert.PanicsWithValue(t, "grpckeys: Compose: Func 0 is nil", func() { grpckeys.Compose(nil) })
	assert.PanicsWithValue(t, "grpckeys: Hashed: nil Func", func() { grpckeys.Hashed(nil, nil) })
}
