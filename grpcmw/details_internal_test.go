package grpcmw

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/local"
)

// TestRetryInfoEncoding: the RetryInfo written by hand is the one proto.Marshal writes, for
// delays with and without whole seconds and nanoseconds, up to the longest Duration.
func TestRetryInfoEncoding(t *testing.T) {
	for _, d := range []time.Duration{time.Millisecond, 999 * time.Millisecond, time.Second,
		1500 * time.Millisecond, 30 * time.Second, math.MaxInt64} {
		want, err := anypb.New(&errdetails.RetryInfo{RetryDelay: durationpb.New(d)})
		require.NoError(t, err)
		got := appendRetryInfo(nil, d)
		assert.True(t, proto.Equal(want, &anypb.Any{TypeUrl: retryInfoURL, Value: got}), "%v", d)
		wantBytes, err := proto.MarshalOptions{Deterministic: true}.Marshal(&errdetails.RetryInfo{RetryDelay: durationpb.New(d)})
		require.NoError(t, err)
		assert.Equal(t, wantBytes, got, "%v", d)
		assert.LessOrEqual(t, len(got), len(denial{}.value), "%v", d)
	}
}

// TestDenialAllocations: a denied unary call costs 15 allocations. 9 are grpc's:
// status.FromProto copies the status (the Status, its proto, its details slice grown to
// two, two Anys and their bytes) and Err wraps it. 2 are the trailer's metadata map. 4 are
// ours: the rate-limit fields in one block, the pushback's value (1000000 ms) and its
// slice, the bucket key. The status given to FromProto comes from a pool, and the
// QuotaFailure is kept from the denial before.
func TestDenialAllocations(t *testing.T) {
	l := local.New()
	t.Cleanup(func() { _ = l.Close() })
	icpt := UnaryServerInterceptor(l, WithLimit(ratelimit.Limit{Rate: 1e-3, Burst: 1}))
	ctx := grpc.NewContextWithServerTransportStream(context.Background(), sink{})
	info := &grpc.UnaryServerInfo{FullMethod: "/test.S/M"}
	handler := func(context.Context, any) (any, error) { return "ok", nil }
	_, err := icpt(ctx, "req", info, handler)
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := icpt(ctx, "req", info, handler); err == nil {
			t.Fatal("allowed")
		}
	})
	assert.Equal(t, 15.0, allocs)
}

// sink is the transport stream of a server call; it drops what it is given.
type sink struct{}

func (sink) Method() string               { return "/test.S/M" }
func (sink) SetHeader(metadata.MD) error  { return nil }
func (sink) SendHeader(metadata.MD) error { return nil }
func (sink) SetTrailer(metadata.MD) error { return nil }
