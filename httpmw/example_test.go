package httpmw_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/httpmw"
	"github.com/sluice-go/ratelimit/local"
)

// A login route limited to 2 requests a minute per client, on the standard library's mux.
// The limiter reads a fixed clock so that the output is the same on every run.
func ExampleNew() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	limiter := local.New(local.WithClock(func() time.Time { return now }))
	defer limiter.Close()

	perClient := httpmw.New(limiter, httpmw.WithLimit(ratelimit.PerMinute(2)))
	mux := http.NewServeMux()
	mux.Handle("POST /login", perClient(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "welcome")
	})))

	for range 3 {
		req := httptest.NewRequest(http.MethodPost, "/login", nil)
		req.RemoteAddr = "198.51.100.7:50000"
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, req)
		fmt.Println(w.Code, w.Header().Get("X-RateLimit-Remaining"), w.Header().Get("Retry-After"), w.Body.String())
	}
	// Output:
	// 200 1  welcome
	// 200 0  welcome
	// 429 0 30 {"error":"rate limit exceeded","retry_after":30}
}
