package grpcmw

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/pipeline"
)

// UnaryServerInterceptor returns a server interceptor that asks l whether each unary call
// may proceed, before the handler runs.
//
// For each call not skipped (WithSkipFunc) it finds the limit (WithLimit, WithMethodLimits
// or WithLimitFunc; the zero Limit means the call is not limited), the key (WithKeyFunc,
// the full method name by default) and the cost (WithCostFunc), and calls l.AllowN. A
// denied call ends with codes.ResourceExhausted, RetryInfo and QuotaFailure details and the
// grpc-retry-pushback-ms trailer; the handler does not run. When l fails, the error handler
// is told and the call proceeds (or ends with codes.Unavailable: WithFailClosed).
//
// It panics if l is nil, if no limit was configured, if two options conflict (each option
// says with which), or if a fixed limit is invalid or not accepted by l, the zero Limit
// included but for a table's default: these are mistakes in the program, not conditions
// to handle at run time.
func UnaryServerInterceptor(l ratelimit.Limiter, opts ...Option) grpc.UnaryServerInterceptor {
	m := newInterceptor("UnaryServerInterceptor", l, opts, false)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		var d pipeline.Decision
		md, err := m.decide(ctx, info.FullMethod, false, &d)
		if md != nil {
			// Fails only without a server stream in ctx, when the interceptor is called
			// directly; there is then no one to send the trailer to.
			_ = grpc.SetTrailer(ctx, md)
		}
		if err != nil {
			return nil, err
		}
		defer d.Permit.Release() // after the handler, even one that panics
		resp, err := handler(ctx, req)
		m.after(ctx, info.FullMethod, &d, err)
		return resp, err
	}
}

// StreamServerInterceptor returns a server interceptor that asks l whether each stream may
// open, once, before the handler runs, as UnaryServerInterceptor does for a unary call.
// With WithPerMessage it charges each message the handler receives instead; see "Streams"
// in the package documentation. It panics as UnaryServerInterceptor does, and also when
// WithPerMessage and WithRefundIf are both given: a refund gives back what one decision
// took, and a stream charged per message is decided once per message, for as long as it
// lasts.
func StreamServerInterceptor(l ratelimit.Limiter, opts ...Option) grpc.StreamServerInterceptor {
	m := newInterceptor("StreamServerInterceptor", l, opts, false)
	if m.perMessage && m.Refund != nil {
		panic("grpcmw: StreamServerInterceptor: WithPerMessage and WithRefundIf: a stream charged per message cannot be refunded; pass one of them")
	}
	if m.perMessage && m.Settle != nil {
		panic("grpcmw: StreamServerInterceptor: WithPerMessage and WithSettle: a stream charged per message has no one charge to settle; pass one of them")
	}
	if m.perMessage && m.Concurrency != nil {
		panic("grpcmw: StreamServerInterceptor: WithPerMessage and WithConcurrency: a permit is held by a stream, not by a message; pass one of them")
	}
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if m.perMessage {
			ms := &messageStream{ServerStream: ss, m: m, method: info.FullMethod}
			err := handler(srv, ms)
			if ms.trailer != nil {
				ss.SetTrailer(ms.trailer)
			}
			return err
		}
		var d pipeline.Decision
		md, err := m.decide(ss.Context(), info.FullMethod, false, &d)
		if md != nil {
			ss.SetTrailer(md)
		}
		if err != nil {
			return err
		}
		defer d.Permit.Release() // held until the stream ends, even by a panic
		err = handler(srv, ss)
		m.after(ss.Context(), info.FullMethod, &d, err)
		return err
	}
}

// messageStream charges each message the handler receives.
type messageStream struct {
	grpc.ServerStream
	m       *interceptor
	method  string
	trailer metadata.MD // of the latest decision; sent once, when the handler returns
}

// RecvMsg receives a message and then charges it: a message the limiter denies has been
// read from the stream, and is dropped.
func (s *messageStream) RecvMsg(msg any) error {
	if err := s.ServerStream.RecvMsg(msg); err != nil {
		return err
	}
	var d pipeline.Decision
	md, err := s.m.decide(s.Context(), s.method, false, &d)
	if md != nil {
		// Kept rather than set: SetTrailer adds to what earlier calls set, and a trailer
		// with two pushback values makes clients give up retrying.
		s.trailer = md
	}
	return err
}
