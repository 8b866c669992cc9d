package httpmw_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/httpmw"
)

// refundServer serves h behind a 5-a-minute limit that refunds every request whose status
// is below 400 ("count only failed logins"), and returns the server and the statuses the
// refund function is given, one per charged request, in order.
func refundServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, <-chan int) {
	t.Helper()
	statuses := make(chan int, 100)
	mw := httpmw.New(newLimiter(t), httpmw.WithLimit(ratelimit.PerMinute(5)),
		httpmw.WithRefundIf(func(_ *http.Request, status int) bool {
			statuses <- status
			return status < 400
		}))
	srv := httptest.NewServer(mw(h))
	t.Cleanup(srv.Close)
	return srv, statuses
}

// received returns the values ch holds. The middleware calls the refund function before
// the server ends the response, so once a client has read a response to its end, its value
// is there.
func received(ch <-chan int) []int {
	var out []int
	for {
		select {
		case v := <-ch:
			out = append(out, v)
		default:
			return out
		}
	}
}

// The refund function is given the final status: not a 1xx before it (103 Early Hints),
// and 200 when the handler wrote none, as net/http answers then. Seven requests at once
// against 5 a minute: failed ones (401) spend the five tokens and the last two are denied;
// successful ones are refunded and all pass.
func TestRefundIfFinalStatus(t *testing.T) {
	earlyHints := func(w http.ResponseWriter) {
		w.Header().Set("Link", "</style.css>; rel=preload; as=style")
		w.WriteHeader(http.StatusEarlyHints)
	}
	failed := []int{401, 401, 401, 401, 401, 429, 429}
	succeeded := []int{200, 200, 200, 200, 200, 200, 200}
	tests := []struct {
		name    string
		handler http.HandlerFunc
		codes   []int // what the client gets
		refund  []int // what the refund function is given
	}{
		{"401", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusUnauthorized)
		}, failed, []int{401, 401, 401, 401, 401}},
		{"103 then 401", func(w http.ResponseWriter, _ *http.Request) {
			earlyHints(w)
			w.WriteHeader(http.StatusUnauthorized)
		}, failed, []int{401, 401, 401, 401, 401}},
		{"103 then a body", func(w http.ResponseWriter, _ *http.Request) {
			earlyHints(w)
			_, _ = io.WriteString(w, "ok")
		}, succeeded, succeeded},
		{"103 only", func(w http.ResponseWriter, _ *http.Request) {
			earlyHints(w)
		}, succeeded, succeeded},
		{"nothing written", func(http.ResponseWriter, *http.Request) {}, succeeded, succeeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, statuses := refundServer(t, tt.handler)
			var codes []int
			for range tt.codes {
				codes = append(codes, send(t, http.MethodPost, srv.URL, ""))
			}
			assert.Equal(t, tt.codes, codes)
			assert.Equal(t, tt.refund, received(statuses))
		})
	}
}
