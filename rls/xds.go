package rls

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rlsconf "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"go.yaml.in/yaml/v3"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/sluice-go/ratelimit/internal/settle"
)

// XDSTypeURL is the type of the resources an XDSWatcher asks for: the rate-limit
// configuration Envoy Gateway serves to its rate-limit service.
const XDSTypeURL = "type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig"

// ErrXDS is wrapped by the errors of an XDSWatcher's stream (the management server
// unreachable, a stream that ended); a pushed configuration that does not load wraps
// ErrConfig instead.
var ErrXDS = errors.New("rls: xDS")

// XDSWatcher keeps a Service's configuration that of the RateLimitConfig resources a
// management server pushes over the aggregated discovery service, state of the world
// (Envoy Gateway serves its rate-limit service so). Each response is the whole
// configuration: its resources, one domain each, are read as files of the format are, and
// take effect as soon as they arrive; the response is then acknowledged. A response that
// does not load, or that the limiter refuses, changes nothing and is refused (a NACK with
// the error) and the service keeps the configuration, and the buckets, it had. Buckets are
// named by their descriptor's keys and values, so an update that keeps a limit resets no one.
// When the stream fails, the watcher opens a new one, waiting between attempts from 100ms,
// doubling up to 30s.
type XDSWatcher struct {
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// WatchXDS starts an XDSWatcher for s on conn, a connection to the management server,
// naming itself node (its Id is what the server's snapshots are keyed by); onLoad, when not
// nil, is told of each configuration that took effect, onError of each response that did
// not load and of each failure of the stream. Close stops it.
func WatchXDS(s *Service, conn grpc.ClientConnInterface, node *core.Node,
	onLoad func(*Config), onError func(error)) *XDSWatcher {
	ctx, cancel := context.WithCancel(context.Background())
	w := &XDSWatcher{cancel: cancel, done: make(chan struct{})}
	x := &xdsStream{
		svc: s, client: discovery.NewAggregatedDiscoveryServiceClient(conn), node: node,
		onLoad: onLoad, onError: onError,
	}
	go func() {
		defer close(w.done)
		x.loop(ctx)
	}()
	return w
}

// Close stops the XDSWatcher and waits for its goroutine; a second Close does nothing.
func (w *XDSWatcher) Close() {
	w.once.Do(w.cancel)
	<-w.done
}

// xdsStream is an XDSWatcher's state: the version it acknowledged last.
type xdsStream struct {
	svc     *Service
	client  discovery.AggregatedDiscoveryServiceClient
	node    *core.Node
	onLoad  func(*Config)
	onError func(error)
	version string      // the last version acknowledged
	refused *settle.Sum // the resources of the last response refused, if any since
}

func (x *xdsStream) loop(ctx context.Context) {
	const first, most = 100 * time.Millisecond, 30 * time.Second
	wait := first
	for {
		received, err := x.serve(ctx)
		if ctx.Err() != nil {
			return
		}
		if x.onError != nil {
			x.onError(fmt.Errorf("%w: %w", ErrXDS, err))
		}
		if received {
			wait = first
		}
		if !pause(ctx, wait) {
			return
		}
		wait = min(2*wait, most)
	}
}

// serve runs one stream until it fails, and reports whether it received a response.
func (x *xdsStream) serve(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := x.client.StreamAggregatedResources(ctx)
	if err != nil {
		return false, err
	}
	req := &discovery.DiscoveryRequest{Node: x.node, TypeUrl: XDSTypeURL, VersionInfo: x.version}
	if err := stream.Send(req); err != nil {
		return false, err
	}
	received := false
	for {
		resp, err := stream.Recv()
		if err != nil {
			return received, err
		}
		received = true
		ack := &discovery.DiscoveryRequest{TypeUrl: XDSTypeURL, ResponseNonce: resp.GetNonce()}
		c, err := x.apply(resp)
		if err != nil {
			ack.ErrorDetail = &status.Status{Code: int32(codes.InvalidArgument), Message: err.Error()}
			sum := responseSum(resp)
			if x.refused != nil && *x.refused == sum {
				// A server that answers a NACK with the same response again (go-control-plane's
				// snapshot cache does, as long as the snapshot stays) is answered at this pace,
				// and told of once.
				if !pause(ctx, xdsNACKPause) {
					return received, ctx.Err()
				}
			} else {
				x.refused = &sum
				if x.onError != nil {
					x.onError(err)
				}
			}
		} else {
			x.version, x.refused = resp.GetVersionInfo(), nil
		}
		ack.VersionInfo = x.version
		if err := stream.Send(ack); err != nil {
			return received, err
		}
		if c != nil && x.onLoad != nil {
			x.onLoad(c)
		}
	}
}

// xdsNACKPause is how long an XDSWatcher waits before it refuses again a response it has
// refused: short, since a new configuration reaches it only after that NACK.
const xdsNACKPause = 500 * time.Millisecond

// pause waits d, and reports false if ctx ended first.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// responseSum identifies the resources of resp, whatever its version and nonce.
func responseSum(resp *discovery.DiscoveryResponse) settle.Sum {
	var b []byte
	for _, a := range resp.GetResources() {
		b = binary.BigEndian.AppendUint64(b, uint64(len(a.GetTypeUrl())))
		b = append(b, a.GetTypeUrl()...)
		b = binary.BigEndian.AppendUint64(b, uint64(len(a.GetValue())))
		b = append(b, a.GetValue()...)
	}
	return settle.Of(b)
}

// apply makes the configuration of resp the service's.
func (x *xdsStream) apply(resp *discovery.DiscoveryResponse) (*Config, error) {
	if resp.GetTypeUrl() != XDSTypeURL {
		return nil, fmt.Errorf("%w: a response of type %q", ErrUnsupported, resp.GetTypeUrl())
	}
	files := make([]File, 0, len(resp.GetResources()))
	for i, a := range resp.GetResources() {
		var rc rlsconf.RateLimitConfig
		if a.GetTypeUrl() != XDSTypeURL {
			return nil, fmt.Errorf("%w: resource %d is of type %q", ErrValue, i, a.GetTypeUrl())
		}
		if err := a.UnmarshalTo(&rc); err != nil {
			return nil, fmt.Errorf("%w: resource %d: %v", ErrSyntax, i, err)
		}
		f, err := resourceFile(&rc)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	// The server's order is not the configuration's: a domain defined twice names the
	// same resources whatever the order they came in.
	slices.SortStableFunc(files, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	c, err := Parse(files...)
	if err != nil {
		return nil, err
	}
	if err := x.svc.SetConfig(c); err != nil {
		return nil, err
	}
	return c, nil
}

// resourceFile writes rc as a file of the format, named "xds:" and the resource's name, so
// that the format's rules have one owner, Parse.
func resourceFile(rc *rlsconf.RateLimitConfig) (File, error) {
	doc := map[string]any{"domain": rc.GetDomain()}
	if d := rc.GetDescriptors(); len(d) > 0 {
		doc["descriptors"] = descriptorDocs(d)
	}
	data, err := yaml.Marshal(doc)
	if err != nil {
		return File{}, fmt.Errorf("%w: resource %q: %v", ErrValue, rc.GetName(), err)
	}
	return File{Name: "xds:" + rc.GetName(), Data: data}, nil
}

func descriptorDocs(ds []*rlsconf.RateLimitDescriptor) []any {
	out := make([]any, 0, len(ds))
	for _, d := range ds {
		m := map[string]any{"key": d.GetKey()}
		if d.GetValue() != "" {
			m["value"] = d.GetValue()
		}
		if d.GetShadowMode() {
			m["shadow_mode"] = true
		}
		if d.GetDetailedMetric() {
			m["detailed_metric"] = true
		}
		if p := d.GetRateLimit(); p != nil {
			m["rate_limit"] = policyDoc(p)
		}
		if len(d.GetDescriptors()) > 0 {
			m["descriptors"] = descriptorDocs(d.GetDescriptors())
		}
		out = append(out, m)
	}
	return out
}

func policyDoc(p *rlsconf.RateLimitPolicy) map[string]any {
	m := map[string]any{}
	if p.GetUnlimited() {
		m["unlimited"] = true
	}
	// A unit the proto does not name is written as its number, which Parse refuses.
	if p.GetUnit() != rlsconf.RateLimitUnit_UNKNOWN || !p.GetUnlimited() {
		m["unit"] = p.GetUnit().String()
	}
	if !p.GetUnlimited() {
		m["requests_per_unit"] = p.GetRequestsPerUnit()
	}
	if p.GetName() != "" {
		m["name"] = p.GetName()
	}
	if len(p.GetReplaces()) > 0 {
		rs := make([]any, 0, len(p.GetReplaces()))
		for _, r := range p.GetReplaces() {
			rs = append(rs, map[string]any{"name": r.GetName()})
		}
		m["replaces"] = rs
	}
	return m
}
