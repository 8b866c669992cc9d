package grpckeys

import (
	"fmt"

	"github.com/sluice-go/ratelimit/internal/clientip"
)

// IPOption configures PeerIP.
type IPOption func(*ipOptions)

type ipOptions struct {
	v4Bits int
	v6Bits int
}

func defaultIPOptions() ipOptions {
	return ipOptions{v4Bits: clientip.DefaultIPv4Bits, v6Bits: clientip.DefaultIPv6Bits}
}

// WithIPv4Prefix keys IPv4 peers by the /bits network that holds them. Default: 32, one key
// per address. bits must be between 0 and 32; PeerIP panics otherwise.
func WithIPv4Prefix(bits int) IPOption {
	return func(o *ipOptions) { o.v4Bits = bits }
}

// WithIPv6Prefix keys IPv6 peers by the /bits network that holds them. Default: 64, since a
// single host commonly holds a whole /64. bits must be between 0 and 128; PeerIP panics
// otherwise.
func WithIPv6Prefix(bits int) IPOption {
	return func(o *ipOptions) { o.v6Bits = bits }
}

func (o ipOptions) validate() error {
	if o.v4Bits < 0 || o.v4Bits > 32 {
		return fmt.Errorf("grpckeys: WithIPv4Prefix(%d): bits must be between 0 and 32", o.v4Bits)
	}
	if o.v6Bits < 0 || o.v6Bits > 128 {
		return fmt.Errorf("grpckeys: WithIPv6Prefix(%d): bits must be between 0 and 128", o.v6Bits)
	}
	return nil
}
