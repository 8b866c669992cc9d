package rules_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/httpmw"
	"github.com/sluice-go/ratelimit/internal/bucket"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/rules"
)

// The reload race: on Redis, 64 clients hammer one policy through the net/http middleware
// while its file is rewritten 100 times between two limits, and once to a file that fails.
// The limits refill one token a day, so that nothing refills during the test (a few
// thousandths of a token): the policy's bucket keeps its usage across every reload, so
// that it admits no more than the largest Burst in force, 50, and, since some requests
// were denied, no fewer than the smallest, 30 (a denial leaves more than Burst − 1 spent).
// After a last reload to a Burst of 1000, Peek finds exactly what was admitted spent.
func TestReloadRace(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: redistest.NewServer(t).Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	// No call may time out on a loaded machine: the test is of decisions, not of speed.
	limiter, err := distributed.New(client, distributed.WithPrefix("reload:"), distributed.WithTimeout(time.Minute))
	require.NoError(t, err)
	t.Cleanup(func() { _ = limiter.Close() })
	path := filepath.Join(t.TempDir(), "rules.json")
	policy := func(version int, limit string) []byte {
		return fmt.Appendf(nil, `{"version": "%d", "default": "api", "policies": {"api": {"limits": [%q], "key": "user"}}}`,
			version, limit)
	}
	limits := []string{"1/day burst 30", "2/day burst 50"}
	live := rules.New(registry, rules.WithValidator(limiter))
	require.NoError(t, os.WriteFile(path, policy(0, limits[0]), 0o600))
	require.NoError(t, live.LoadFile(path))
	// Failing closed, so that an error is an answer of its own (503), not an admission.
	srv := httptest.NewServer(httpmw.New(limiter, httpmw.WithRules(live), httpmw.WithFailClosed())(
		http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	t.Cleanup(srv.Close)

	const clients, each = 64, 10
	var admitted, denied atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range each {
				req, err := http.NewRequest(http.MethodGet, srv.URL+"/items", nil)
				if !assert.NoError(t, err) {
					return
				}
				req.Header.Set("X-User", "42")
				resp, err := http.DefaultClient.Do(req)
				if !assert.NoError(t, err) {
					return
				}
				_ = resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusOK:
					admitted.Add(1)
				case http.StatusTooManyRequests:
					denied.Add(1)
				default:
					assert.Fail(t, "a request failed", "status %d", resp.StatusCode)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-start
		for i := 1; i <= 100; i++ {
			if !assert.NoError(t, os.WriteFile(path, policy(i, limits[i%2]), 0o600)) || !assert.NoError(t, live.LoadFile(path)) {
				return
			}
			if i == 50 {
				// A file that fails changes nothing: the set in force, and its limit, stay.
				assert.NoError(t, os.WriteFile(path, []byte(`{"version": "bad", "default": "api", "policies": {}}`), 0o600))
				assert.ErrorIs(t, live.LoadFile(path), rules.ErrInvalid)
				assert.Equal(t, "50", live.Set().Version)
				p, _ := live.Set().Policy("api")
				assert.Equal(t, 30, p.Limits[0].Burst, "version 50's limit, %s", limits[0])
			}
		}
	}()
	close(start)
	wg.Wait()

	n := int(admitted.Load())
	require.Equal(t, int64(clients*each), admitted.Load()+denied.Load(), "every request answered")
	require.LessOrEqual(t, n, 50, "no more than the largest Burst in force")
	require.GreaterOrEqual(t, n, 30, "no fewer than the smallest, since some were denied")
	require.Positive(t, denied.Load())

	require.NoError(t, os.WriteFile(path, policy(101, "2/day burst 1000"), 0o600))
	require.NoError(t, live.LoadFile(path))
	p, _ := live.Set().Policy("api")
	res, err := limiter.Peek(context.Background(), bucket.Name{Policy: "api"}.Key("user:42"), p.Limits[0], 1)
	require.NoError(t, err)
	// What one more request would leave: 1000 − admitted − 1.
	assert.Equal(t, ratelimit.Result{Allowed: true, Limit: p.Limits[0], Remaining: 1000 - n - 1, ResetAfter: res.ResetAfter}, res)
}
