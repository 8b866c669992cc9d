package grpcmw

import (
	"context"

	"google.golang.org/grpc"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/pipeline"
)

// UnaryClientInterceptor returns a client interceptor that asks l whether each unary call
// may be sent. A denied call never leaves the process: it ends with the same
// codes.ResourceExhausted status, details and trailer as a server's denial (the trailer
// reaches the caller through a grpc.Trailer call option). With WithWait it waits for its
// turn instead. Limits, keys, costs, skipping and errors work as on the server side, the
// context being the outgoing one.
//
// It panics if l is nil, if no limit was configured, if two options conflict (each option
// says with which; WithWait among them), or if a fixed limit is invalid or
// not accepted by l, the zero Limit included but for a table's default.
func UnaryClientInterceptor(l ratelimit.Limiter, opts ...Option) grpc.UnaryClientInterceptor {
	m := newClientInterceptor("UnaryClientInterceptor", l, opts)
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, callOpts ...grpc.CallOption) error {
		var d pipeline.Decision
		if err := m.admitClient(ctx, method, callOpts, &d); err != nil {
			return err
		}
		defer d.Permit.Release()
		err := invoker(ctx, method, req, reply, cc, callOpts...)
		m.after(ctx, method, &d, err)
		return err
	}
}

// StreamClientInterceptor returns a client interceptor that asks l whether each stream may
// be opened, once, before it is: a denied stream is never opened. It otherwise works as
// UnaryClientInterceptor, and panics in the same cases.
func StreamClientInterceptor(l ratelimit.Limiter, opts ...Option) grpc.StreamClientInterceptor {
	m := newClientInterceptor("StreamClientInterceptor", l, opts)
	if m.Concurrency != nil {
		panic("grpcmw: StreamClientInterceptor: WithConcurrency: a client stream's end is not seen by an interceptor, so its permit could not be released; limit concurrency on the server")
	}
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, callOpts ...grpc.CallOption) (grpc.ClientStream, error) {
		var d pipeline.Decision
		if err := m.admitClient(ctx, method, callOpts, &d); err != nil {
			return nil, err
		}
		cs, err := streamer(ctx, desc, cc, method, callOpts...)
		if err != nil { // a stream that opened has not ended yet: only a failed opening refunds
			m.after(ctx, method, &d, err)
		}
		return cs, err
	}
}

func newClientInterceptor(name string, l ratelimit.Limiter, opts []Option) *interceptor {
	return newInterceptor(name, l, opts, true)
}

// admitClient decides a call on the client side, in d. The trailer of a denial goes where a
// server's would: into the caller's grpc.Trailer call options.
func (m *interceptor) admitClient(ctx context.Context, method string, callOpts []grpc.CallOption, d *pipeline.Decision) error {
	md, err := m.decide(ctx, method, m.wait, d)
	if err != nil && md != nil {
		for _, o := range callOpts {
			if t, ok := o.(grpc.TrailerCallOption); ok && t.TrailerAddr != nil {
				*t.TrailerAddr = md.Copy()
			}
		}
	}
	return err
}
