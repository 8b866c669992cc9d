package nilarg_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/admin"
	cdistributed "github.com/sluice-go/ratelimit/concurrency/distributed"
	cfallback "github.com/sluice-go/ratelimit/concurrency/fallback"
	clocal "github.com/sluice-go/ratelimit/concurrency/local"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/ginmw"
	"github.com/sluice-go/ratelimit/grpcmw"
	"github.com/sluice-go/ratelimit/httpmw"
	"github.com/sluice-go/ratelimit/internal/nilarg"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/otelmetrics"
	"github.com/sluice-go/ratelimit/rules"
	"github.com/sluice-go/ratelimit/slogobserver"
)

func TestIs(t *testing.T) {
	var l *local.Limiter
	var lim ratelimit.Limiter = l
	var f func()
	var m map[string]int
	assert.True(t, nilarg.Is(nil))
	assert.True(t, nilarg.Is(lim))
	assert.True(t, nilarg.Is(f))
	assert.True(t, nilarg.Is(m))
	assert.False(t, nilarg.Is(0))
	assert.False(t, nilarg.Is(""))
	assert.False(t, nilarg.Is(local.New(local.WithCleanupInterval(-1))))
	assert.False(t, nilarg.Typed(nil))
	assert.True(t, nilarg.Typed(lim))
}

// Every constructor of the module that takes a limiter, an observer or a client refuses
// one that holds a nil pointer when it is built, with a panic or an error that names the
// argument, instead of panicking on the first request that reaches it (for a fallback's
// secondary, the first request of the first outage). Where nil means "none" (a
// fallback's secondary, an observer, a rules validator), the untyped nil still does.
func TestConstructorsRefuseTypedNil(t *testing.T) {
	var (
		nilLocal   *local.Limiter
		nilPermits *clocal.Limiter
		nilObs     *slogobserver.Observer
		nilClient  *redis.Client
		nilCluster *redis.ClusterClient
		nilMP      *sdkmetric.MeterProvider
	)
	rl := local.New(local.WithCleanupInterval(-1))
	t.Cleanup(func() { _ = rl.Close() })
	permits := clocal.New()
	t.Cleanup(func() { _ = permits.Close() })
	obs := slogobserver.New(nil)
	rs := rules.New(nil)
	allow := func(*http.Request) bool { return true }
	limit := ginmw.WithLimit(ratelimit.PerSecond(1))
	doc, err := rules.ParseJSON("rules.json", []byte(`{"default": "d", "policies": {"d": {"limits": ["1/s"]}}}`))
	require.NoError(t, err)

	cases := []struct {
		name string
		call func() error // nil when built; the error or the panic otherwise
		want string       // "" when it must be built
	}{
		{"fallback.New/primary", func() error { fallback.New(nilLocal, rl); return nil }, "fallback: New: nil primary Limiter"},
		{"fallback.New/secondary", func() error { fallback.New(rl, nilLocal); return nil }, "fallback: New: nil secondary Limiter (*local.Limiter): pass nil for none"},
		{"fallback.New/no secondary", func() error { fallback.New(rl, nil); return nil }, ""},
		{"concurrency/fallback.New/primary", func() error { cfallback.New(nilPermits, permits); return nil }, "fallback: New: nil primary Limiter"},
		{"concurrency/fallback.New/secondary", func() error { cfallback.New(permits, nilPermits); return nil }, "fallback: New: nil secondary Limiter (*local.Limiter): pass nil for none"},
		{"concurrency/fallback.New/no secondary", func() error { cfallback.New(permits, nil); return nil }, ""},
		{"admin.New", func() error { admin.New(nilLocal, rs, allow); return nil }, "admin: New: nil Limiter, Rules or authorization function"},
		{"rules.New/WithValidator", func() error { rules.New(nil, rules.WithValidator(nilLocal)); return nil }, "rules: New: WithValidator: a nil *local.Limiter"},
		{"rules.New/none", func() error { rules.New(nil, rules.WithValidator(nil)); return nil }, ""},
		{"rules.Compile/WithValidator", func() error { _, err := rules.Compile(doc, nil, rules.WithValidator(nilLocal)); return err }, "rules: Compile: WithValidator: a nil *local.Limiter"},
		{"observe.Join", func() error { observe.Join(obs, nilObs); return nil }, "observe: Join: a nil *slogobserver.Observer"},
		{"observe.Join/none", func() error { observe.Join(obs, nil); return nil }, ""},
		{"observe.Wrap/limiter", func() error { observe.Wrap(nilLocal, obs, "p"); return nil }, "observe: Wrap: nil Limiter"},
		{"observe.Wrap/observer", func() error { observe.Wrap(rl, nilObs, "p"); return nil }, "observe: Join: a nil *slogobserver.Observer"},
		{"otelmetrics.New/WithMeterProvider", func() error { _, err := otelmetrics.New(otelmetrics.WithMeterProvider(nilMP)); return err }, "otelmetrics: New: WithMeterProvider: a nil *metric.MeterProvider"},
		{"otelmetrics.New/WithConcurrency", func() error {
			_, err := otelmetrics.New(otelmetrics.WithMeterProvider(sdkmetric.NewMeterProvider()), otelmetrics.WithConcurrency("p", nilPermits))
			return err
		}, "otelmetrics: New: WithConcurrency: a nil *local.Limiter"},
		{"distributed.New", func() error { _, err := distributed.New(nilClient); return err }, "distributed: New: nil client"},
		{"concurrency/distributed.New", func() error { _, err := cdistributed.New(nilCluster); return err }, "distributed: New: nil client"},
		{"ginmw.New", func() error { ginmw.New(nilLocal, limit); return nil }, "ginmw: New: nil Limiter"},
		{"ginmw.New/WithObserver", func() error { ginmw.New(rl, limit, ginmw.WithObserver(nilObs)); return nil }, "ginmw: New: WithObserver: a nil *slogobserver.Observer"},
		{"ginmw.New/WithConcurrency", func() error { ginmw.New(rl, limit, ginmw.WithConcurrency(nilPermits, 1)); return nil }, "ginmw: New: WithConcurrency: nil concurrency.Limiter"},
		{"httpmw.New", func() error { httpmw.New(nilLocal, httpmw.WithLimit(ratelimit.PerSecond(1))); return nil }, "httpmw: New: nil Limiter"},
		{"httpmw.New/WithObserver", func() error {
			httpmw.New(rl, httpmw.WithLimit(ratelimit.PerSecond(1)), httpmw.WithObserver(nilObs))
			return nil
		}, "httpmw: New: WithObserver: a nil *slogobserver.Observer"},
		{"grpcmw.UnaryServerInterceptor", func() error { grpcmw.UnaryServerInterceptor(nilLocal); return nil }, "grpcmw: UnaryServerInterceptor: nil Limiter"},
		{"grpcmw.StreamServerInterceptor/WithObserver", func() error { grpcmw.StreamServerInterceptor(rl, grpcmw.WithObserver(nilObs)); return nil }, "grpcmw: StreamServerInterceptor: WithObserver: a nil *slogobserver.Observer"},
		{"grpcmw.UnaryClientInterceptor", func() error { grpcmw.UnaryClientInterceptor(nilLocal); return nil }, "grpcmw: UnaryClientInterceptor: nil Limiter"},
		{"grpcmw.StreamClientInterceptor", func() error { grpcmw.StreamClientInterceptor(nilLocal); return nil }, "grpcmw: StreamClientInterceptor: nil Limiter"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := refused(c.call)
			if c.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, c.want)
		})
	}
}

// refused returns what call returned, or the panic it made, as an error.
func refused(call func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return call()
}
