package rules_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/sluice-go/ratelimit/httpmw"
	"github.com/sluice-go/ratelimit/keyfuncs/httpkeys"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/rules"
)

// A rules file gives POST /login two limits per client address and every other route one.
// A program loads it with LoadFile and keeps it current with Watch; here it is loaded from
// memory, and the limiter reads a fixed clock so that the output is the same on every run.
func ExampleNew() {
	const file = `{
  "version": "1",
  "default": "api",
  "policies": {
    "login": {"limits": ["2/min", "20/h"], "key": "client-ip"},
    "api":   {"limits": ["100/min"], "key": "client-ip"}
  },
  "rules": [
    {"match": {"route": "POST /login"}, "policy": "login"}
  ]
}`
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	limiter := local.New(local.WithClock(func() time.Time { return now }))
	defer limiter.Close()

	reg := rules.Registry{
		"client-ip": rules.HTTPKey(httpkeys.ClientIP()), // never a value the client chooses
	}
	live := rules.New(reg, rules.WithValidator(limiter))
	if err := live.Load("rules.json", []byte(file)); err != nil {
		fmt.Println(err) // a program refuses to start on a bad file
		return
	}

	mux := http.NewServeMux()
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, _ *http.Request) {})
	mux.HandleFunc("GET /items", func(w http.ResponseWriter, _ *http.Request) {})
	handler := httpmw.New(limiter, httpmw.WithRules(live))(mux)

	for _, route := range []string{"POST /login", "POST /login", "POST /login", "GET /items"} {
		var method, path string
		fmt.Sscan(route, &method, &path)
		req := httptest.NewRequest(method, path, nil)
		req.RemoteAddr = "198.51.100.7:50000"
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, req)
		fmt.Println(route, w.Code, w.Header().Get("X-RateLimit-Limit"))
	}
	// Output:
	// POST /login 200 2
	// POST /login 200 2
	// POST /login 429 2
	// GET /items 200 100
}
