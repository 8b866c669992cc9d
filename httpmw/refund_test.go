package httpmw_test

import (
	"bufio"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	srv := httptest.NewUnstartedServer(mw(h))
	// A handler that writes after a flush makes net/http log a superfluous WriteHeader.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
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
		{"a flush, then 401", func(w http.ResponseWriter, _ *http.Request) {
			// The flush sends the header with 200; the 401 after it is too late.
			_ = http.NewResponseController(w).Flush()
			w.WriteHeader(http.StatusUnauthorized)
		}, succeeded, succeeded},
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

// A server-sent events handler that asserts http.Flusher streams through the middleware
// on a charged request: the client reads the first event while the handler still runs.
func TestRefundIfServerSentEvents(t *testing.T) {
	read := make(chan struct{})
	srv, statuses := refundServer(t, func(w http.ResponseWriter, r *http.Request) {
		f, ok := w.(http.Flusher)
		if !ok {
			http.Error(w, "streaming unsupported", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: 1\n\n")
		f.Flush()
		select {
		case <-read:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, "data: 2\n\n")
	})

	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	events := bufio.NewReader(resp.Body)
	first, err := events.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "data: 1\n", first)
	close(read)
	rest, err := io.ReadAll(events)
	require.NoError(t, err)
	assert.Equal(t, "\ndata: 2\n\n", string(rest))
	assert.Equal(t, []int{200}, received(statuses))
}

// A handler that takes the connection over (a websocket upgrade, here a line echo) can
// hijack it through the middleware on a charged request. It wrote nothing through the
// ResponseWriter, so the refund function is given 200.
func TestRefundIfHijack(t *testing.T) {
	srv, statuses := refundServer(t, func(w http.ResponseWriter, _ *http.Request) {
		hj, ok := w.(http.Hijacker)
		if !ok {
			http.Error(w, "hijacking unsupported", http.StatusInternalServerError)
			return
		}
		conn, rw, err := hj.Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		_ = rw.Flush()
		line, _ := rw.ReadString('\n')
		_, _ = rw.WriteString(line)
		_ = rw.Flush()
	})

	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "echo")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	conn, ok := resp.Body.(io.ReadWriter) // net/http's client gives a 101's connection so
	require.True(t, ok)
	_, err = io.WriteString(conn, "ping\n")
	require.NoError(t, err)
	echo, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "ping\n", echo)
	// The handler owns the connection, so the client may read the echo before the
	// middleware has called the refund function: wait for it.
	assert.Equal(t, 200, <-statuses)
}

// http.ResponseController reaches the server's writer through the middleware on a charged
// request: SetWriteDeadline and Flush work, and the flush commits the status, 200.
func TestRefundIfResponseController(t *testing.T) {
	srv, statuses := refundServer(t, func(w http.ResponseWriter, _ *http.Request) {
		rc := http.NewResponseController(w)
		if err := rc.SetWriteDeadline(time.Now().Add(time.Minute)); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if err := rc.Flush(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, "flushed")
	})

	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "flushed", string(body))
	assert.Equal(t, []int{200}, received(statuses))
}
