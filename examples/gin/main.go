// Command gin runs a small Gin API with two rate limits: a strict one on POST /login
// (5 a minute per client, failing closed) and a generous one on the /api group (300 a
// minute per client, failing open). GET /healthz is not limited.
//
// By default the buckets live in memory (package local); -redis switches to a Redis
// server, so that several instances share one limit:
//
//	go run ./examples/gin
//	go run ./examples/gin -redis localhost:6379
//	go run ./examples/gin -trusted-proxies 10.0.0.0/8,fd00::/8   # behind a load balancer
//
// Then, from another terminal:
//
//	for i in 1 2 3 4 5 6; do curl -si -X POST localhost:8080/login | head -1; done
//	curl -si localhost:8080/api/items/42
//	curl -s localhost:8080/metrics | grep ratelimit_
//
// GET /metrics serves the limiter's decisions in Prometheus's format (package prommetrics).
// The example is a module of its own, so that client_golang never becomes a dependency of
// ratelimit: run it from its directory, cd examples/gin && go run . (flags as above).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/ginmw"
	"github.com/sluice-go/ratelimit/headers"
	"github.com/sluice-go/ratelimit/keyfuncs"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/prommetrics"
)

func main() {
	addr := flag.String("addr", "localhost:8080", "address to listen on")
	redisAddr := flag.String("redis", "", "Redis address (host:port); empty keeps the buckets in memory")
	proxies := flag.String("trusted-proxies", "", "comma-separated CIDRs of the proxies in front of this server")
	flag.Parse()

	trusted, err := parsePrefixes(*proxies)
	if err != nil {
		log.Fatalf("gin example: -trusted-proxies: %v", err)
	}
	limiter, closeLimiter, err := newLimiter(*redisAddr)
	if err != nil {
		log.Fatalf("gin example: %v", err)
	}
	defer closeLimiter()

	registry := prometheus.NewRegistry()
	metrics := prommetrics.New()
	registry.MustRegister(metrics)
	srv := &http.Server{Addr: *addr, Handler: newRouter(limiter, trusted, metrics, registry), ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Printf("gin example: listening on http://%s (limiter: %s)", *addr, backendName(*redisAddr))
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatalf("gin example: %v", err)
	}
}

// newRouter builds the API: the limits are per client address, with trusted naming the
// proxies whose X-Forwarded-For may be believed. Every decision is reported to obs, and
// GET /metrics serves what gatherer holds.
func newRouter(limiter ratelimit.Limiter, trusted []netip.Prefix, obs observe.Observer, gatherer prometheus.Gatherer) *gin.Engine {
	byClient := ginmw.WithKeyFunc(keyfuncs.ClientIP(keyfuncs.WithTrustedProxies(trusted...)))
	observed := ginmw.WithObserver(obs)

	r := gin.New()
	r.Use(gin.Logger(), gin.Recovery()) // gin.Logger also prints limiter errors (c.Errors)
	r.GET("/healthz", func(c *gin.Context) { c.String(http.StatusOK, "ok") })
	r.GET("/metrics", gin.WrapH(promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{})))

	// Guessing passwords should stay slow even when the limiter is down: fail closed.
	r.POST("/login",
		ginmw.New(limiter, byClient, observed, ginmw.WithLimit(ratelimit.PerMinute(5)),
			ginmw.WithFailClosed(),
			ginmw.WithHeaderStyle(headers.StyleBoth), ginmw.WithPolicyName("login")),
		func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"token": "demo"}) })

	// The API should stay up when the limiter is down: fail open (the default).
	api := r.Group("/api", ginmw.New(limiter, byClient, observed, ginmw.WithLimit(ratelimit.PerMinute(300)),
		ginmw.WithHeaderStyle(headers.StyleBoth), ginmw.WithPolicyName("api")))
	api.GET("/items/:id", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"id": c.Param("id")}) })
	return r
}

// newLimiter returns the in-memory limiter, or a Redis limiter when redisAddr is set, and a
// function that releases it.
func newLimiter(redisAddr string) (ratelimit.Limiter, func(), error) {
	if redisAddr == "" {
		l := local.New()
		return l, func() { _ = l.Close() }, nil
	}
	// ContextTimeoutEnabled lets the limiter's short per-call timeout cut a stalled read.
	client := redis.NewClient(&redis.Options{Addr: redisAddr, ContextTimeoutEnabled: true})
	l, err := distributed.New(client, distributed.WithPrefix("gin-example:"))
	if err != nil {
		_ = client.Close()
		return nil, nil, err
	}
	return l, func() { _ = l.Close(); _ = client.Close() }, nil
}

func backendName(redisAddr string) string {
	if redisAddr == "" {
		return "in memory"
	}
	return "Redis at " + redisAddr
}

// parsePrefixes parses a comma-separated list of CIDRs; "" gives none.
func parsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", f, err)
		}
		out = append(out, p)
	}
	return out, nil
}
