package rls

import (
	"errors"
	"io"
	"net/http"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
)

// maxJSONBody is the largest /json request body read, 1 MiB.
const maxJSONBody = 1 << 20

// Handler returns the service's HTTP endpoints, as the reference service serves them:
//
//   - POST /json takes a RateLimitRequest in proto3 JSON and answers the RateLimitResponse
//     in proto3 JSON, with status 200, or 429 when its overall code is OVER_LIMIT; a body
//     that is not a request (or over 1 MiB) is a 400, a failure the service answers with
//     an error a 503 (Unavailable) or 500.
//   - GET /healthcheck answers 200 "OK".
//   - GET /metrics is metrics, when it is not nil.
func (s *Service) Handler(metrics http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /json", s.serveJSON)
	mux.HandleFunc("GET /healthcheck", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "OK")
	})
	if metrics != nil {
		mux.Handle("GET /metrics", metrics)
	}
	return mux
}

func (s *Service) serveJSON(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJSONBody))
	if err != nil {
		code := http.StatusBadRequest
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			code = http.StatusRequestEntityTooLarge
		}
		http.Error(w, "rls: the request body could not be read", code)
		return
	}
	var req pb.RateLimitRequest
	if err := protojson.Unmarshal(body, &req); err != nil {
		http.Error(w, "rls: not a RateLimitRequest in proto3 JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	resp, err := s.ShouldRateLimit(r.Context(), &req)
	if err != nil {
		code := http.StatusInternalServerError
		switch status.Code(err) {
		case codes.InvalidArgument:
			code = http.StatusBadRequest
		case codes.Unavailable:
			code = http.StatusServiceUnavailable
		}
		http.Error(w, status.Convert(err).Message(), code)
		return
	}
	out, err := protojson.Marshal(resp)
	if err != nil {
		http.Error(w, "rls: the response could not be written", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if resp.GetOverallCode() == pb.RateLimitResponse_OVER_LIMIT {
		w.WriteHeader(http.StatusTooManyRequests)
	}
	_, _ = w.Write(out)
}
