package faults

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/ginmw"
	"github.com/sluice-go/ratelimit/headers"
)

// The limits of the tests with many keys (service). A limited key is asked for many times
// its rate, so that Redis admits about as much as the limit allows, Burst + Rate·d in d
// (GCRA's bound, from a full bucket), and what a fault makes it forget shows as requests
// admitted beyond that. A counter key (the limit counter: nothing refused, nothing
// refilled) keeps in Redis the exact number of charges Redis took for it.
var (
	keyedLimit = ratelimit.Limit{Rate: 5, Burst: 10}
	keyedShare = ratelimit.Limit{Rate: 2.5, Burst: 5} // fallback.WithInstances(2)
)

// keyedWorkers is how many clients send requests in a loop in the tests with many keys.
const keyedWorkers = 8

// keys names the keys of a test with many keys: limited keys l00, l01, … and counter keys
// c00, c01, …. The middleware puts each in braces, a Redis Cluster hash tag, so that the
// key's slot is the slot of its name and a test can ask the Cluster which node holds it.
type keys struct {
	names []string
}

func newKeys(limited, counters int) keys {
	var k keys
	for i := range limited {
		k.names = append(k.names, fmt.Sprintf("l%02d", i))
	}
	for i := range counters {
		k.names = append(k.names, fmt.Sprintf("c%02d", i))
	}
	return k
}

// limited reports whether key i is a limited key, rather than a counter.
func (k keys) limited(i int) bool { return strings.HasPrefix(k.names[i], "l") }

// keyOf returns the key of name, as the service's key function gives it: in braces, so that
// Redis Cluster places it by name alone.
func keyOf(name string) string { return "{" + name + "}" }

// limiterKey returns the key the middleware hands the limiter for name: its bucket key,
// the policy's name and then the key.
func limiterKey(name string) string { return headers.DefaultPolicyName + "|" + keyOf(name) }

// limitOf returns the limit of the key called name.
func limitOf(name string) ratelimit.Limit {
	if strings.HasPrefix(name, "c") {
		return counter
	}
	return keyedLimit
}

// service is a Gin engine behind the middleware, on a loopback HTTP server: GET /k/NAME
// answers 200 when the stack admits the key NAME (in braces) under limitOf(NAME), 429 when
// it denies it, and fails open if the stack cannot decide. The stack is handed to the
// middleware timed, so that each decision's latency is recorded.
type service struct {
	url    string
	client *http.Client
}

func newService(t *testing.T, s *stack) *service {
	t.Helper()
	r := gin.New()
	r.Use(ginmw.New(s.timed,
		ginmw.WithKeyFunc(func(c *gin.Context) (string, error) { return keyOf(c.Param("name")), nil }),
		ginmw.WithLimitFunc(func(c *gin.Context) ratelimit.Limit { return limitOf(c.Param("name")) })))
	r.GET("/k/:name", func(c *gin.Context) { c.String(http.StatusOK, "ok") })
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	transport := &http.Transport{MaxIdleConnsPerHost: keyedWorkers}
	t.Cleanup(transport.CloseIdleConnections)
	return &service{url: srv.URL, client: &http.Client{Transport: transport, Timeout: 5 * time.Second}}
}

// get asks for key name and returns the status, or 0 if the request failed on its way.
func (v *service) get(name string) int {
	resp, err := v.client.Get(v.url + "/k/" + name)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// warmUp sends one request for every key, which loads the script into every Redis that
// holds one, and opens the connections the load will use.
func (v *service) warmUp(t *testing.T, k keys) {
	t.Helper()
	for _, name := range k.names {
		require.Equal(t, http.StatusOK, v.get(name), "the first request for a key")
	}
}
