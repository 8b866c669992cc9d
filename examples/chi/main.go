// Command chi serves an API routed by chi (github.com/go-chi/chi) with a limit per route:
// 5 logins a minute and 300 item reads a minute per client, each route a policy of its own,
// named by chi's route pattern. It keeps its buckets in memory.
//
//	go run ./examples/chi   (from examples/chi: go run .)
package main

import (
	"io"
	"log"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/headers"
	"github.com/sluice-go/ratelimit/httpmw"
	"github.com/sluice-go/ratelimit/local"
)

func main() {
	limiter := local.New()
	defer limiter.Close()
	srv := &http.Server{Addr: ":8080", Handler: newRouter(limiter), ReadHeaderTimeout: 5 * time.Second}
	log.Fatal(srv.ListenAndServe())
}

// newRouter builds the API. chi knows a request's route pattern once it has matched the
// route, so the middleware is mounted with r.With, on the routes, where
// chi.RouteContext(...).RoutePattern() names the route; WithRouteFunc hands it to
// WithRouteLimits. (Mounted with r.Use on the router, before chi matches, the middleware
// would see no pattern: it then applies the default limit and reports it once.)
func newRouter(limiter ratelimit.Limiter) http.Handler {
	limit := httpmw.New(limiter,
		httpmw.WithRouteLimits(map[string]ratelimit.Limit{
			"/login":      ratelimit.PerMinute(5),
			"/items/{id}": ratelimit.PerMinute(300),
		}, ratelimit.Limit{}),
		httpmw.WithRouteFunc(func(r *http.Request) string { return chi.RouteContext(r.Context()).RoutePattern() }),
		httpmw.WithHeaderStyle(headers.StyleBoth))

	r := chi.NewRouter()
	r.With(limit).Post("/login", text(`{"token":"demo"}`))
	r.With(limit).Get("/items/{id}", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"id":"`+chi.URLParam(r, "id")+`"}`)
	})
	r.Get("/healthz", text("ok")) // not limited
	return r
}

func text(s string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, s) }
}
