package redistest

import (
	"errors"
	"math/rand/v2"
	"net"
	"strconv"
)

const (
	host = "127.0.0.1"

	// busPortOffset is fixed by Redis Cluster: each node also listens on its
	// client port plus 10000 for the node-to-node bus.
	busPortOffset = 10000

	// Cluster ports are drawn from a range whose bus ports still fit below
	// 65536; the kernel's port-0 choice could land too high for that.
	clusterPortMin = 20000
	clusterPortMax = 50000
)

// freePort asks the kernel for a port that is free right now. Another process
// may take it before redis-server binds it; start retries when that happens.
func freePort() (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// freeClusterPort returns a port that, together with its bus port, can be
// bound right now.
func freeClusterPort() (int, error) {
	for range 100 {
		p := clusterPortMin + rand.IntN(clusterPortMax-clusterPortMin)
		if canBind(p) && canBind(p+busPortOffset) {
			return p, nil
		}
	}
	return 0, errors.New("no port pair (port, port+10000) free in [20000, 50000) after 100 tries")
}

func canBind(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}
