package peer

import (
	"context"
	"log/slog"
	"runtime/debug"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// RecoverUnary and RecoverStream keep a panic in one peer RPC from taking
// the node down, as the SMB server's per-connection recovery does: the
// call fails with INTERNAL and the panic is logged with its stack.
func RecoverUnary(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
		defer recovered(log, info.FullMethod, &err)
		return h(ctx, req)
	}
}

// RecoverStream is RecoverUnary for streaming calls.
func RecoverStream(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
		defer recovered(log, info.FullMethod, &err)
		return h(srv, ss)
	}
}

func recovered(log *slog.Logger, method string, err *error) {
	if p := recover(); p != nil {
		log.Error("panic in a peer call", "method", method, "panic", p, "stack", string(debug.Stack()))
		*err = status.Errorf(codes.Internal, "panic in %s", method)
	}
}
