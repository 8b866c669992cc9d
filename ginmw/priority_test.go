package ginmw_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/ginmw"
	"github.com/sluice-go/ratelimit/headers"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/priority"
)

// TestPriorityLoad: a Gin server on loopback, limited on Redis to 100 requests an hour for
// one client (Burst 100: nothing refills in the time the test takes), with /stats sheddable
// and /login critical. Sixteen clients flood /stats with 1000 requests, ten times the
// limit, while a trickle of 40 /login requests goes out, one after each 25 answers to the
// flood. Sheddable requests stop at the Sheddable reserve, half the burst: none of the 40
// logins is denied, since they are fewer than the 50 tokens kept for them. The tokens add
// up exactly: what the flood and the logins took plus what Redis says is left is 100. Then
// logins alone exhaust the reserve, and only then is a login denied.
func TestPriorityLoad(t *testing.T) {
	server := redistest.NewServer(t)
	client := redis.NewClient(&redis.Options{Addr: server.Addr(), ContextTimeoutEnabled: true, PoolSize: 32})
	t.Cleanup(func() { _ = client.Close() })
	// A generous deadline: a decision failing on a loaded 2-core machine running -race would
	// not be a priority test; and were one to fail, FailClosed makes it a 503, not a pass.
	limiter, err := distributed.New(client, distributed.WithTimeout(10*time.Second))
	require.NoError(t, err)
	limit := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 100}

	r := gin.New()
	const key = "user:42" // every request is the same client's
	r.Use(ginmw.New(limiter, ginmw.WithLimit(limit), ginmw.WithFailClosed(),
		ginmw.WithKeyFunc(func(*gin.Context) (string, error) { return key, nil }),
		ginmw.WithPriorityFunc(func(c *gin.Context) priority.Level {
			if c.FullPath() == "/stats" {
				return priority.Sheddable
			}
			return priority.Critical
		})))
	r.GET("/stats", func(c *gin.Context) { c.String(http.StatusOK, "stats") })
	r.POST("/login", func(c *gin.Context) { c.String(http.StatusOK, "welcome") })
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	httpClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	t.Cleanup(httpClient.CloseIdleConnections)

	// send returns the status of one request, and its X-RateLimit-Remaining.
	send := func(method, path string) (int, int, error) {
		req, err := http.NewRequestWithContext(context.Background(), method, srv.URL+path, nil)
		if err != nil {
			return 0, 0, err
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			return 0, 0, err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		remaining, err := strconv.Atoi(resp.Header.Get("X-RateLimit-Remaining"))
		if err != nil {
			return resp.StatusCode, 0, fmt.Errorf("%s %s: status %d, %s, no X-RateLimit-Remaining", method, path, resp.StatusCode, body)
		}
		return resp.StatusCode, remaining, nil
	}

	const clients, flood, logins, every = 16, 1000, 40, 25
	var answered, statsOK, statsDenied, loginOK atomic.Int64
	var next atomic.Int64 // the flood's requests, handed out to the clients
	var flooding atomic.Int64
	flooding.Store(clients) // clients still sending
	var wg sync.WaitGroup
	errs := make(chan error, clients+1)
	for range clients {
		wg.Go(func() {
			defer flooding.Add(-1)
			for next.Add(1) <= flood {
				code, remaining, err := send(http.MethodGet, "/stats")
				if err != nil {
					errs <- err
					return
				}
				switch {
				case code == http.StatusOK:
					statsOK.Add(1)
				case code == http.StatusTooManyRequests && remaining == 0:
					statsDenied.Add(1)
				default:
					errs <- &unexpected{path: "/stats", code: code, remaining: remaining}
					return
				}
				answered.Add(1)
			}
		})
	}
	wg.Go(func() {
		for i := range logins {
			// One login after each 25 answers to the flood: spread through it, whatever the
			// machine's speed. Once the flood is over (or has failed) the rest go at once.
			for answered.Load() < int64(every*(i+1)) && flooding.Load() > 0 {
				runtime.Gosched()
			}
			code, remaining, err := send(http.MethodPost, "/login")
			if err != nil {
				errs <- err
				return
			}
			if code != http.StatusOK {
				errs <- &unexpected{path: "/login", code: code, remaining: remaining}
				return
			}
			loginOK.Add(1)
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, int64(logins), loginOK.Load(), "a login was denied while the reserve held")
	require.Equal(t, int64(flood), statsOK.Load()+statsDenied.Load())
	shed := statsOK.Load()
	// The flood took 50 tokens less those the logins took before it reached the reserve.
	require.True(t, shed >= 50-logins && shed <= 50, "the flood took %d tokens", shed)

	// What Redis holds: a Critical Peek would leave left − 1, a Sheddable one is denied.
	left := int64(limit.Burst) - shed - logins
	// the middleware's bucket: its policy's, then the key
	bucket := headers.DefaultPolicyName + "|" + key
	peeked, err := limiter.Peek(context.Background(), bucket, limit, 1)
	require.NoError(t, err)
	require.True(t, peeked.Allowed)
	require.Equal(t, int(left-1), peeked.Remaining, "flood %d, logins %d", shed, logins)
	peeked, err = limiter.Peek(priority.With(context.Background(), priority.Sheddable), bucket, limit, 1)
	require.NoError(t, err)
	require.False(t, peeked.Allowed)

	// Logins take the rest of the reserve, each told what is left, and only then is one
	// denied.
	for i := range left {
		code, remaining, err := send(http.MethodPost, "/login")
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, "login %d of the %d left", i, left)
		assert.Equal(t, int(left-1-i), remaining)
	}
	code, remaining, err := send(http.MethodPost, "/login")
	require.NoError(t, err)
	assert.Equal(t, http.StatusTooManyRequests, code)
	assert.Zero(t, remaining)
}

// unexpected is an answer the load test did not expect.
type unexpected struct {
	path            string
	code, remaining int
}

func (u *unexpected) Error() string {
	return u.path + ": status " + strconv.Itoa(u.code) + ", remaining " + strconv.Itoa(u.remaining)
}
