package httpmw

import (
	"bufio"
	"io"
	"net"
	"net/http"
)

// statusWriter remembers the final status a handler answered, for WithRefundIf.
type statusWriter struct {
	http.ResponseWriter
	code int // the first final status written; 0 until then
}

func (s *statusWriter) WriteHeader(code int) {
	if s.code == 0 && !informational(code) {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	s.committed()
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the methods of the writer that no wrapper
// exposes (SetWriteDeadline, EnableFullDuplex).
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// committed notes that the header went out with 200, as net/http sends it when a body or
// a flush comes before any final WriteHeader.
func (s *statusWriter) committed() {
	if s.code == 0 {
		s.code = http.StatusOK
	}
}

// status is the final status of the response: 200 when the handler wrote none, as net/http
// answers then.
func (s *statusWriter) status() int {
	if s.code == 0 {
		return http.StatusOK
	}
	return s.code
}

// informational reports whether code is a 1xx that precedes the final status (103 Early
// Hints, say). Like net/http, it does not count 101 Switching Protocols, which is final.
func informational(code int) bool {
	return code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols
}

// The optional interfaces of a ResponseWriter, each over a statusWriter whose writer has
// it.
type (
	flusher    struct{ *statusWriter }
	hijacker   struct{ *statusWriter }
	readerFrom struct{ *statusWriter }
	pusher     struct{ *statusWriter }
)

func (f flusher) Flush() {
	f.committed()
	f.ResponseWriter.(http.Flusher).Flush()
}

func (h hijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return h.ResponseWriter.(http.Hijacker).Hijack()
}

func (r readerFrom) ReadFrom(src io.Reader) (int64, error) {
	n, err := r.ResponseWriter.(io.ReaderFrom).ReadFrom(src)
	if n > 0 {
		r.committed() // net/http sends no header for an empty source
	}
	return n, err
}

func (p pusher) Push(target string, opts *http.PushOptions) error {
	return p.ResponseWriter.(http.Pusher).Push(target, opts)
}

// wrap returns s as a ResponseWriter that has exactly the optional interfaces of the writer
// s wraps, among http.Flusher, http.Hijacker, io.ReaderFrom and http.Pusher: a handler that
// asserts one (SSE asserts Flusher, a websocket upgrade Hijacker) finds it when the server
// has it, as it would without the middleware. One type per combination, since a method in a
// type's method set is there for every value of the type.
func wrap(s *statusWriter) http.ResponseWriter {
	const (
		canFlush = 1 << iota
		canHijack
		canReadFrom
		canPush
	)
	var has int
	if _, ok := s.ResponseWriter.(http.Flusher); ok {
		has |= canFlush
	}
	if _, ok := s.ResponseWriter.(http.Hijacker); ok {
		has |= canHijack
	}
	if _, ok := s.ResponseWriter.(io.ReaderFrom); ok {
		has |= canReadFrom
	}
	if _, ok := s.ResponseWriter.(http.Pusher); ok {
		has |= canPush
	}
	f, h, r, p := flusher{s}, hijacker{s}, readerFrom{s}, pusher{s}
	type (
		F = http.Flusher
		H = http.Hijacker
		R = io.ReaderFrom
		P = http.Pusher
	)
	switch has {
	case 0:
		return s
	case canFlush:
		return struct {
			*statusWriter
			F
		}{s, f}
	case canHijack:
		return struct {
			*statusWriter
			H
		}{s, h}
	case canFlush | canHijack:
		return struct {
			*statusWriter
			F
			H
		}{s, f, h}
	case canReadFrom:
		return struct {
			*statusWriter
			R
		}{s, r}
	case canFlush | canReadFrom:
		return struct {
			*statusWriter
			F
			R
		}{s, f, r}
	case canHijack | canReadFrom:
		return struct {
			*statusWriter
			H
			R
		}{s, h, r}
	case canFlush | canHijack | canReadFrom: // net/http's HTTP/1 writer
		return struct {
			*statusWriter
			F
			H
			R
		}{s, f, h, r}
	case canPush:
		return struct {
			*statusWriter
			P
		}{s, p}
	case canFlush | canPush: // net/http's HTTP/2 writer
		return struct {
			*statusWriter
			F
			P
		}{s, f, p}
	case canHijack | canPush:
		return struct {
			*statusWriter
			H
			P
		}{s, h, p}
	case canFlush | canHijack | canPush:
		return struct {
			*statusWriter
			F
			H
			P
		}{s, f, h, p}
	case canReadFrom | canPush:
		return struct {
			*statusWriter
			R
			P
		}{s, r, p}
	case canFlush | canReadFrom | canPush:
		return struct {
			*statusWriter
			F
			R
			P
		}{s, f, r, p}
	case canHijack | canReadFrom | canPush:
		return struct {
			*statusWriter
			H
			R
			P
		}{s, h, r, p}
	default: // all four
		return struct {
			*statusWriter
			F
			H
			R
			P
		}{s, f, h, r, p}
	}
}
