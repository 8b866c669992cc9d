package rls

import (
	"context"
	"net"
	"testing"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	xdsserver "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	rlsconf "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-go/ratelimit"
)

// xdsPeer is a management server of go-control-plane on a loopback port, serving the
// snapshots set for node "rls-test", and what the client told it.
type xdsPeer struct {
	cache cache.SnapshotCache
	conn  *grpc.ClientConn
	acks  chan *discovery.DiscoveryRequest // every request after the first of a stream
}

func serveXDS(t *testing.T) *xdsPeer {
	p := &xdsPeer{
		cache: cache.NewSnapshotCache(false, cache.IDHash{}, nil),
		acks:  make(chan *discovery.DiscoveryRequest, 16),
	}
	callbacks := xdsserver.CallbackFuncs{
		StreamRequestFunc: func(_ int64, req *discovery.DiscoveryRequest) error {
			if req.GetResponseNonce() != "" {
				p.acks <- proto.CloneOf(req)
			}
			return nil
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv := xdsserver.NewServer(ctx, p.cache, callbacks)
	gs := grpc.NewServer()
	discovery.RegisterAggregatedDiscoveryServiceServer(gs, srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { defer close(done); _ = gs.Serve(ln) }()
	p.conn, err = grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = p.conn.Close()
		cancel()
		gs.Stop()
		<-done
	})
	return p
}

// push sets the snapshot of version v for node "rls-test".
func (p *xdsPeer) push(t *testing.T, v string, configs ...*rlsconf.RateLimitConfig) {
	res := make([]types.Resource, len(configs))
	for i, c := range configs {
		res[i] = c
	}
	snap, err := cache.NewSnapshot(v, map[resource.Type][]types.Resource{resource.RateLimitConfigType: res})
	require.NoError(t, err)
	require.NoError(t, p.cache.SetSnapshot(context.Background(), "rls-test", snap))
}

func rlc(name, domain string, ds ...*rlsconf.RateLimitDescriptor) *rlsconf.RateLimitConfig {
	return &rlsconf.RateLimitConfig{Name: name, Domain: domain, Descriptors: ds}
}

func perMinute(key string, n uint32) *rlsconf.RateLimitDescriptor {
	return &rlsconf.RateLimitDescriptor{Key: key, RateLimit: &rlsconf.RateLimitPolicy{
		Unit: rlsconf.RateLimitUnit_MINUTE, RequestsPerUnit: n,
	}}
}

// TestXDS pushes snapshots from go-control-plane's server to a watcher: each good one takes
// effect when the watcher says it loaded it (no poll: the push is the event), keeps the
// usage of the limits it keeps and is acknowledged with its version; a bad one is refused
// with the last good version and changes nothing.
func TestXDS(t *testing.T) {
	peer := serveXDS(t)
	clock := newClock()
	s, err := New(newLocal(t, clock), nil, WithClock(clock.Now), WithoutHeaders())
	require.NoError(t, err)
	loads, errs := make(chan *Config, 4), make(chan error, 4)
	w := WatchXDS(s, peer.conn, &core.Node{Id: "rls-test"},
		func(c *Config) { loads <- c }, func(err error) { errs <- err })
	defer w.Close()
	call := func(kv ...string) *pb.RateLimitResponse {
		r, err := s.ShouldRateLimit(context.Background(), rq("api", 0, desc(kv...)))
		require.NoError(t, err)
		return r
	}
	// nextAck is the next request that acknowledges a response; the NACKs the server's
	// resending of a refused snapshot brings are skipped.
	nextAck := func() *discovery.DiscoveryRequest {
		for {
			if r := <-peer.acks; r.GetErrorDetail() == nil {
				return r
			}
		}
	}

	// Version 1: user 5 a minute. At t0 the minute has 50 s to go.
	peer.push(t, "1", rlc("api-limits", "api", perMinute("user", 5)))
	assert.Equal(t, []string{"api"}, (<-loads).Domains())
	ack := nextAck()
	assert.Equal(t, "1", ack.GetVersionInfo())
	assert.Nil(t, ack.GetErrorDetail())
	for remaining := uint32(4); remaining >= 2; remaining-- {
		assert.Equal(t, text(resp(ok, st(ok, 5, minute, remaining, 50))), text(call("user", "a")))
	}

	// Version 2 keeps user's limit and adds a domain: a's 3 calls stay counted.
	peer.push(t, "2", rlc("api-limits", "api", perMinute("user", 5), perMinute("org", 1)),
		rlc("edge-limits", "edge", perMinute("ip", 9)))
	assert.Equal(t, []string{"api", "edge"}, (<-loads).Domains())
	assert.Equal(t, "2", nextAck().GetVersionInfo())
	assert.Equal(t, text(resp(ok, st(ok, 5, minute, 1, 50))), text(call("user", "a")))

	// Version 3 defines user twice: refused, naming the resource, and version 2 stays.
	peer.push(t, "3", rlc("api-limits", "api", perMinute("user", 5), perMinute("user", 7)))
	err = <-errs
	require.ErrorIs(t, err, ErrDuplicateKey)
	assert.Contains(t, err.Error(), "xds:api-limits")
	nack := <-peer.acks
	assert.Equal(t, "2", nack.GetVersionInfo(), "a NACK names the version in use")
	require.NotNil(t, nack.GetErrorDetail())
	assert.Contains(t, nack.GetErrorDetail().GetMessage(), "duplicate descriptor")
	assert.Equal(t, text(resp(ok, st(ok, 5, minute, 0, 50))), text(call("user", "a")))
	assert.Equal(t, text(resp(over, st(over, 5, minute, 0, 50))), text(call("user", "a")))
	assert.Equal(t, []string{"api", "edge"}, s.Config().Domains())

	// Version 4 unblocks a: its limit rises to 10, usage kept (5 allowed; the denial took
	// nothing).
	peer.push(t, "4", rlc("api-limits", "api", perMinute("user", 10)))
	assert.Equal(t, []string{"api"}, (<-loads).Domains())
	assert.Equal(t, "4", nextAck().GetVersionInfo())
	assert.Equal(t, text(resp(ok, st(ok, 10, minute, 4, 50))), text(call("user", "a")))
	select {
	case err := <-errs:
		t.Errorf("unexpected error: %v", err)
	default:
	}
}

// TestResourceFile reads RateLimitConfig resources as the format's files: every field the
// proto has reaches the rule, and what the format refuses is refused, by class.
func TestResourceFile(t *testing.T) {
	policy := func(unit rlsconf.RateLimitUnit, n uint32) *rlsconf.RateLimitPolicy {
		return &rlsconf.RateLimitPolicy{Unit: unit, RequestsPerUnit: n}
	}
	good := rlc("shop-limits", "shop",
		&rlsconf.RateLimitDescriptor{Key: "tenant", Value: "acme", Descriptors: []*rlsconf.RateLimitDescriptor{
			{Key: "plan", RateLimit: policy(rlsconf.RateLimitUnit_SECOND, 4)},
			{Key: "plan", Value: "gold", RateLimit: &rlsconf.RateLimitPolicy{
				Unit: rlsconf.RateLimitUnit_SECOND, RequestsPerUnit: 40, Name: "gold",
				Replaces: []*rlsconf.RateLimitReplace{{Name: "base"}},
			}},
		}},
		&rlsconf.RateLimitDescriptor{Key: "internal", RateLimit: &rlsconf.RateLimitPolicy{Unlimited: true}},
		&rlsconf.RateLimitDescriptor{Key: "banned", RateLimit: policy(rlsconf.RateLimitUnit_DAY, 0)},
		&rlsconf.RateLimitDescriptor{Key: "trial", ShadowMode: true, DetailedMetric: true,
			RateLimit: policy(rlsconf.RateLimitUnit_HOUR, 7)},
		&rlsconf.RateLimitDescriptor{Key: "health", Value: "yes"},
	)
	f, err := resourceFile(good)
	require.NoError(t, err)
	assert.Equal(t, "xds:shop-limits", f.Name)
	c, err := Parse(f)
	require.NoError(t, err)
	top, known := c.domain("shop")
	require.True(t, known)
	rule := func(kv ...string) *Rule { return lookup(top, entries(kv...)).rule }

	plan := rule("tenant", "acme", "plan", "free")
	require.NotNil(t, plan)
	assert.Equal(t, [2]any{second, uint32(4)}, [2]any{plan.Unit, plan.RequestsPerUnit})
	gold := rule("tenant", "acme", "plan", "gold")
	require.NotNil(t, gold)
	assert.Equal(t, "gold", gold.Name)
	assert.Equal(t, []string{"base"}, gold.Replaces)
	assert.Equal(t, uint32(40), gold.RequestsPerUnit)
	assert.True(t, rule("internal", "x").Unlimited)
	banned := rule("banned", "x")
	assert.Equal(t, day, banned.Unit)
	assert.True(t, banned.Limit == (ratelimit.Limit{}), "requests_per_unit 0 blocks")
	trial := rule("trial", "x")
	assert.True(t, trial.Shadow)
	assert.Equal(t, hour, trial.Unit)
	health := lookup(top, entries("health", "yes"))
	assert.Nil(t, health.rule, "neither a limit nor children: no limit")

	for _, tc := range []struct {
		name string
		desc *rlsconf.RateLimitDescriptor
		want error
	}{
		{"unlimited with a unit", &rlsconf.RateLimitDescriptor{Key: "k", RateLimit: &rlsconf.RateLimitPolicy{
			Unlimited: true, Unit: rlsconf.RateLimitUnit_SECOND}}, ErrUnlimitedWithUnit},
		{"no unit", &rlsconf.RateLimitDescriptor{Key: "k", RateLimit: policy(rlsconf.RateLimitUnit_UNKNOWN, 3)}, ErrUnit},
		{"a unit the proto lacks", &rlsconf.RateLimitDescriptor{Key: "k", RateLimit: policy(9, 3)}, ErrUnit},
		{"replaces itself", &rlsconf.RateLimitDescriptor{Key: "k", RateLimit: &rlsconf.RateLimitPolicy{
			Unit: rlsconf.RateLimitUnit_SECOND, RequestsPerUnit: 1, Name: "n",
			Replaces: []*rlsconf.RateLimitReplace{{Name: "n"}}}}, ErrReplaces},
		{"an empty key", &rlsconf.RateLimitDescriptor{RateLimit: policy(rlsconf.RateLimitUnit_SECOND, 1)}, ErrEmptyKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := resourceFile(rlc("r", "d", tc.desc))
			require.NoError(t, err)
			_, err = Parse(f)
			assert.ErrorIs(t, err, tc.want)
		})
	}
	f, err = resourceFile(rlc("nameless", ""))
	require.NoError(t, err)
	_, err = Parse(f)
	assert.ErrorIs(t, err, ErrEmptyDomain)
}
