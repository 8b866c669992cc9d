package httpmw_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/httpmw"
)

// fake is a ResponseWriter with none of the optional interfaces; the types below add one
// each, and log the calls it gets.
type fake struct {
	http.ResponseWriter
	calls []string
}

type (
	fakeFlusher    struct{ *fake }
	fakeHijacker   struct{ *fake }
	fakeReaderFrom struct{ *fake }
	fakePusher     struct{ *fake }
)

func (f fakeFlusher) Flush() { f.calls = append(f.calls, "Flush") }

func (f fakeHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	f.calls = append(f.calls, "Hijack")
	return nil, nil, nil
}

func (f fakeReaderFrom) ReadFrom(io.Reader) (int64, error) {
	f.calls = append(f.calls, "ReadFrom")
	return 0, nil
}

func (f fakePusher) Push(string, *http.PushOptions) error {
	f.calls = append(f.calls, "Push")
	return nil
}

// capability names the optional interfaces, in the order of the bits of a combination.
var capability = [4]string{"Flush", "Hijack", "ReadFrom", "Push"}

// combination returns f as a writer with the optional interfaces whose bits are set in
// has: bit i for capability[i].
func combination(f *fake, has int) http.ResponseWriter {
	type (
		F = http.Flusher
		H = http.Hijacker
		R = io.ReaderFrom
		P = http.Pusher
	)
	fl, hj, rf, pu := fakeFlusher{f}, fakeHijacker{f}, fakeReaderFrom{f}, fakePusher{f}
	return [16]http.ResponseWriter{
		f,
		struct {
			*fake
			F
		}{f, fl},
		struct {
			*fake
			H
		}{f, hj},
		struct {
			*fake
			F
			H
		}{f, fl, hj},
		struct {
			*fake
			R
		}{f, rf},
		struct {
			*fake
			F
			R
		}{f, fl, rf},
		struct {
			*fake
			H
			R
		}{f, hj, rf},
		struct {
			*fake
			F
			H
			R
		}{f, fl, hj, rf},
		struct {
			*fake
			P
		}{f, pu},
		struct {
			*fake
			F
			P
		}{f, fl, pu},
		struct {
			*fake
			H
			P
		}{f, hj, pu},
		struct {
			*fake
			F
			H
			P
		}{f, fl, hj, pu},
		struct {
			*fake
			R
			P
		}{f, rf, pu},
		struct {
			*fake
			F
			R
			P
		}{f, fl, rf, pu},
		struct {
			*fake
			H
			R
			P
		}{f, hj, rf, pu},
		struct {
			*fake
			F
			H
			R
			P
		}{f, fl, hj, rf, pu},
	}[has]
}

// For each of the 16 combinations of http.Flusher, http.Hijacker, io.ReaderFrom and
// http.Pusher on the server's writer, the writer a handler gets on a charged request with
// WithRefundIf has exactly those, each reaching the server's method, and unwraps to the
// server's writer for http.ResponseController.
func TestRefundIfWriterCapabilities(t *testing.T) {
	mw := httpmw.New(newLimiter(t), httpmw.WithLimit(ratelimit.PerMinute(100)),
		httpmw.WithRefundIf(func(*http.Request, int) bool { return false }))
	for has := range 16 {
		var want []string
		for i, name := range capability {
			if has&(1<<i) != 0 {
				want = append(want, name)
			}
		}
		name := "none"
		if want != nil {
			name = strings.Join(want, "+")
		}
		t.Run(name, func(t *testing.T) {
			f := &fake{ResponseWriter: httptest.NewRecorder()}
			server := combination(f, has)
			var got []string
			var unwrapped http.ResponseWriter
			mw(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if fl, ok := w.(http.Flusher); ok {
					got = append(got, "Flush")
					fl.Flush()
				}
				if hj, ok := w.(http.Hijacker); ok {
					got = append(got, "Hijack")
					_, _, _ = hj.Hijack()
				}
				if rf, ok := w.(io.ReaderFrom); ok {
					got = append(got, "ReadFrom")
					_, _ = rf.ReadFrom(strings.NewReader(""))
				}
				if pu, ok := w.(http.Pusher); ok {
					got = append(got, "Push")
					_ = pu.Push("/style.css", nil)
				}
				if u, ok := w.(interface{ Unwrap() http.ResponseWriter }); ok {
					unwrapped = u.Unwrap()
				}
			})).ServeHTTP(server, httptest.NewRequest(http.MethodGet, "/", nil))
			assert.Equal(t, want, got, "interfaces the handler finds")
			assert.Equal(t, want, f.calls, "calls the server's writer gets")
			assert.True(t, unwrapped == server, "Unwrap gives the server's writer")
		})
	}
}
