package httpmw

import "net/http"

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

// Unwrap lets http.ResponseController reach the writer's other methods (Flush, Hijack).
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// committed notes that the header went out with 200, as net/http sends it when a body
// comes before any final WriteHeader.
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
