package grpckeys_test

import (
	"context"
	"fmt"
	"net"

	"google.golang.org/grpc/peer"

	"github.com/sluice-go/ratelimit/keyfuncs/grpckeys"
)

// An IPv6 peer is keyed by its /64; a Unix-socket peer has no address, which is an error,
// not a panic.
func ExamplePeerIP() {
	key := grpckeys.PeerIP()
	for _, addr := range []net.Addr{
		&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2::99"), Port: 50051},
		&net.UnixAddr{Name: "/run/app.sock", Net: "unix"},
	} {
		ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: addr})
		fmt.Println(key(ctx, "/shop.Cart/Add"))
	}
	// Output:
	// ip:2001:db8:1:2::/64 <nil>
	//  ratelimit: empty key: gRPC peer "unix" is not an IP address
}
