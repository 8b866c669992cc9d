package grpckeys

import (
	"github.com/sluice-go/ratelimit/internal/clientip"
)

// IPOption configures PeerIP. A nil IPOption is skipped.
type IPOption func(*ipOptions)

type ipOptions struct {
	clientip.Options // only the prefix lengths: PeerIP never reads forwarded addresses
}

// WithIPv4Prefix keys IPv4 peers by the /bits network that holds them. Default: 32, one key
// per address. It applies as well to IPv4 peers behind a NAT64 translator, which are keyed
// by their IPv4 address. bits must be between 0 and 32; PeerIP panics otherwise.
func WithIPv4Prefix(bits int) IPOption {
	return func(o *ipOptions) { o.IPv4Bits = bits }
}

// WithIPv6Prefix keys IPv6 peers by the /bits network that holds them. Default: 64, since a
// single host commonly holds a whole /64. bits must be between 0 and 128; PeerIP panics
// otherwise.
func WithIPv6Prefix(bits int) IPOption {
	return func(o *ipOptions) { o.IPv6Bits = bits }
}
