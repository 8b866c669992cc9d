package grpcmw_test

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// Fakes for calling the interceptors directly, without a server.

// unaryOK is a unary handler that counts its runs.
func unaryOK(runs *int) grpc.UnaryHandler {
	return func(context.Context, any) (any, error) {
		*runs++
		return "ok", nil
	}
}

// direct calls a unary server interceptor as the server would, with a transport stream that
// records the trailer, and returns the trailer and the error.
func direct(ctx context.Context, icpt grpc.UnaryServerInterceptor, method string, handler grpc.UnaryHandler) (metadata.MD, error) {
	sts := &transportStream{method: method}
	ctx = grpc.NewContextWithServerTransportStream(ctx, sts)
	_, err := icpt(ctx, "req", &grpc.UnaryServerInfo{FullMethod: method}, handler)
	return sts.trailer, err
}

// transportStream is a grpc.ServerTransportStream that records the trailer.
type transportStream struct {
	method  string
	trailer metadata.MD
}

func (s *transportStream) Method() string               { return s.method }
func (s *transportStream) SetHeader(metadata.MD) error  { return errors.New("unexpected SetHeader") }
func (s *transportStream) SendHeader(metadata.MD) error { return errors.New("unexpected SendHeader") }
func (s *transportStream) SetTrailer(md metadata.MD) error {
	s.trailer = metadata.Join(s.trailer, md)
	return nil
}

// serverStream is a grpc.ServerStream whose client sends n messages and then closes.
type serverStream struct {
	ctx     context.Context
	n       int
	trailer metadata.MD
}

func (s *serverStream) SetHeader(metadata.MD) error  { return errors.New("unexpected SetHeader") }
func (s *serverStream) SendHeader(metadata.MD) error { return errors.New("unexpected SendHeader") }
func (s *serverStream) SetTrailer(md metadata.MD)    { s.trailer = metadata.Join(s.trailer, md) }
func (s *serverStream) Context() context.Context     { return s.ctx }
func (s *serverStream) SendMsg(any) error            { return nil }
func (s *serverStream) RecvMsg(any) error {
	if s.n == 0 {
		return io.EOF
	}
	s.n--
	return nil
}

// drain is a stream handler that receives until the end, counting the messages it gets in
// *got, and returns the first error other than io.EOF.
func drain(got *int) grpc.StreamHandler {
	return func(_ any, ss grpc.ServerStream) error {
		for {
			if err := ss.RecvMsg(nil); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
			*got++
		}
	}
}
