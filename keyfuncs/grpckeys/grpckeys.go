package grpckeys

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/internal/clientip"
	"github.com/sluice-go/ratelimit/internal/keypart"
)

// Func returns the rate-limit key of a gRPC call, given the call's context and its full
// method name ("/package.Service/Method"). An error wraps ratelimit.ErrInvalidArgument.
type Func func(ctx context.Context, fullMethod string) (string, error)

// PeerIP returns a Func that keys a call by the IP address of its peer, from
// peer.FromContext: "ip:192.0.2.7", or "ip:2001:db8:1:2::/64" for IPv6 (see
// WithIPv6Prefix). It fails, without panicking, when the context has no peer or the peer
// has no IP address (a Unix socket, an in-memory bufconn listener). It panics at
// construction if an option is out of range.
func PeerIP(opts ...IPOption) Func {
	o := ipOptions{clientip.DefaultOptions()}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if err := o.Validate("grpckeys"); err != nil {
		panic(err.Error())
	}
	return func(ctx context.Context, _ string) (string, error) {
		p, ok := peer.FromContext(ctx)
		if !ok || p == nil || p.Addr == nil {
			return "", fmt.Errorf("%w: no gRPC peer in the context", args.ErrKeyEmpty)
		}
		a, ok := addrOf(p.Addr)
		if !ok {
			return "", fmt.Errorf("%w: gRPC peer %s is not an IP address", args.ErrKeyEmpty, network(p.Addr))
		}
		return o.Key(a), nil
	}
}

// addrOf returns the IP address of a, read from the struct for TCP and UDP addresses and
// parsed from a.String() for any other type.
func addrOf(a net.Addr) (netip.Addr, bool) {
	switch a := a.(type) {
	case *net.TCPAddr:
		ip := a.AddrPort().Addr() // nil-safe: a nil *TCPAddr gives the zero AddrPort
		return clientip.Normalize(ip), ip.IsValid()
	case *net.UDPAddr:
		ip := a.AddrPort().Addr()
		return clientip.Normalize(ip), ip.IsValid()
	case *net.UnixAddr:
		return netip.Addr{}, false
	}
	s, ok := describeOK(a)
	if !ok {
		return netip.Addr{}, false
	}
	return clientip.ParseAddr(s)
}

// network names a's network for an error message ("unix", "bufconn"), quoted, or its type
// when a.Network panics. The address itself is not reported: a peer that is not an IP
// address may still be named after a client.
func network(a net.Addr) (s string) {
	defer func() {
		if recover() != nil {
			s = fmt.Sprintf("of type %T", a)
		}
	}()
	return fmt.Sprintf("%q", a.Network())
}

// describeOK calls a.String, reporting false if it panics (a typed nil of an address type
// whose String method does not expect nil): a key function must not take the call down.
func describeOK(a net.Addr) (s string, ok bool) {
	defer func() {
		if recover() != nil {
			s, ok = "", false
		}
	}()
	return a.String(), true
}

// Metadata returns a Func that keys a call by the first non-blank value of the incoming
// metadata key name, labelled with the name in lower case: Metadata("x-api-key") gives
// "x-api-key:abc". A value longer than 128 bytes is replaced by a digest. Missing or blank
// metadata is an error. The client writes metadata: key by it only where something upstream
// has authenticated the value.
func Metadata(name string) Func {
	label := strings.ToLower(name)
	return func(ctx context.Context, _ string) (string, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		for _, v := range md.Get(label) {
			if v = strings.TrimSpace(v); v != "" {
				return keypart.Label(label, v), nil
			}
		}
		return "", fmt.Errorf("%w: metadata %s is missing or blank", args.ErrKeyEmpty, label)
	}
}

// ContextValue returns a Func that keys a call by ctx.Value(key), typically a user ID that
// an authentication interceptor stored, labelled with label: ContextValue("user", userKey{})
// gives "user:42". The value may be a string, any integer type, or a fmt.Stringer; other
// types, a missing value and an empty string are errors.
func ContextValue(label string, key any) Func {
	what := "context value " + label
	return func(ctx context.Context, _ string) (string, error) {
		return keypart.ContextValue(label, ctx.Value(key), what)
	}
}

// FullMethod returns a Func that keys a call by its full method name:
// "rpc:/package.Service/Method". An empty name is an error. Interceptors see only
// registered methods, unless the server has an UnknownServiceHandler, which lets clients
// name any method: then every method name is a new key.
func FullMethod() Func {
	return func(_ context.Context, fullMethod string) (string, error) {
		if fullMethod == "" {
			return "", fmt.Errorf("%w: empty gRPC method name", args.ErrKeyEmpty)
		}
		return keypart.Label("rpc", fullMethod), nil
	}
}

// Compose returns a Func that joins the keys of fs with "|", in order:
// Compose(ContextValue("user", userKey{}), FullMethod()) gives "user:42|rpc:/pkg.Svc/Get".
// Parts are escaped and long keys digested as httpkeys.Compose describes. It fails when any
// part fails. It panics if fs is empty or holds nil.
func Compose(fs ...Func) Func {
	parts := make([]func(call) (string, error), len(fs))
	for i, f := range fs {
		if f != nil { // a nil stays nil, for keypart.Compose to report
			parts[i] = f.onCall
		}
	}
	k := keypart.Compose("grpckeys", parts)
	return func(ctx context.Context, fullMethod string) (string, error) { return k(call{ctx, fullMethod}) }
}

// Hashed returns a Func that replaces the key of f by "h:#" and 22 characters of
// HMAC-SHA256(secret, key), as httpkeys.Hashed and keyfuncs.Hashed do (the same key and
// secret give the same result in all three packages). With an empty secret a plain SHA-256
// is used, which does not hide IP addresses from anyone who can try all of them. It panics
// if f is nil.
func Hashed(secret []byte, f Func) Func {
	var g func(call) (string, error)
	if f != nil {
		g = f.onCall
	}
	k := keypart.Hashed("grpckeys", secret, g)
	return func(ctx context.Context, fullMethod string) (string, error) { return k(call{ctx, fullMethod}) }
}

// call holds a Func's two arguments as one, for keypart's Compose and Hashed, which take
// functions of one argument.
type call struct {
	ctx        context.Context
	fullMethod string
}

func (f Func) onCall(c call) (string, error) { return f(c.ctx, c.fullMethod) }
