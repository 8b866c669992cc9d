// Command http runs a small net/http API on the standard library's mux with a rate limit per
// route and client: 5 a minute on POST /login (failing closed), 300 a minute on GET
// /api/items/{id} (failing open). GET /healthz is not limited.
//
// By default the buckets live in memory (package local); -redis switches to a Redis server,
// so that several instances share one limit:
//
//	go run ./examples/http
//	go run ./examples/http -redis localhost:6379
//
// Then, from another terminal:
//
//	for i in 1 2 3 4 5 6; do curl -si -X POST localhost:8080/login | head -1; done
//	curl -si localhost:8080/api/items/42
package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/headers"
	"github.com/sluice-go/ratelimit/httpmw"
	"github.com/sluice-go/ratelimit/local"
)

func main() {
	addr := flag.String("addr", "localhost:8080", "address to listen on")
	redisAddr := flag.String("redis", "", "Redis address (host:port); empty keeps the buckets in memory")
	flag.Parse()

	limiter, closeLimiter, err := newLimiter(*redisAddr)
	if err != nil {
		log.Fatalf("http example: %v", err)
	}
	defer closeLimiter()

	srv := &http.Server{Addr: *addr, Handler: newMux(limiter), ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Printf("http example: listening on http://%s", *addr)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatalf("http example: %v", err)
	}
}

// newMux builds the API. Each route pattern gets its own limit from WithRouteLimits, keyed
// by the client's address, as a policy of its own named by the pattern (in the headers, the
// metrics and the bucket keys); the mux sets the pattern as it routes, so the middleware
// wraps each handler. Logins fail closed, so that guessing passwords stays slow while the
// limiter is down; a second middleware with the same table and the other error policy
// serves the rest.
func newMux(limiter ratelimit.Limiter) *http.ServeMux {
	limits := map[string]ratelimit.Limit{
		"POST /login":         ratelimit.PerMinute(5),
		"GET /api/items/{id}": ratelimit.PerMinute(300),
	} // other routes (GET /healthz) get the default, the zero Limit: not limited
	style := httpmw.WithHeaderStyle(headers.StyleBoth)
	strict := httpmw.New(limiter, httpmw.WithRouteLimits(limits, ratelimit.Limit{}), style,
		httpmw.WithFailClosed())
	open := httpmw.New(limiter, httpmw.WithRouteLimits(limits, ratelimit.Limit{}), style)

	mux := http.NewServeMux()
	mux.Handle("POST /login", strict(text(`{"token":"demo"}`)))
	mux.Handle("GET /api/items/{id}", open(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"id":"`+r.PathValue("id")+`"}`)
	})))
	mux.Handle("GET /healthz", open(text("ok")))
	return mux
}

func text(s string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, s) })
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
	l, err := distributed.New(client, distributed.WithPrefix("http-example:"))
	if err != nil {
		_ = client.Close()
		return nil, nil, err
	}
	return l, func() { _ = l.Close(); _ = client.Close() }, nil
}
