package service

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
)

// healthMethod answers without a token (load balancers, probes).
const healthMethod = "/smbcluster.admin.v1.ClusterService/Health"

// authenticator checks the bearer token in each call's "authorization"
// metadata ("Bearer TOKEN") against the coordinator's token.
type authenticator struct {
	want [sha256.Size]byte // SHA-256 of the token: compared in constant time
	hint string            // where the token is, for refusals
}

func newAuthenticator(token, hint string) *authenticator {
	if hint == "" {
		hint = "the coordinator's token is in its --token-file"
	}
	return &authenticator{want: sha256.Sum256([]byte(token)), hint: hint}
}

func (a *authenticator) check(ctx context.Context, method string) error {
	if method == healthMethod {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get("authorization")
	if len(vals) == 0 {
		return errorf(codes.Unauthenticated, "no bearer token: %s", a.hint)
	}
	tok, ok := strings.CutPrefix(vals[0], "Bearer ")
	got := sha256.Sum256([]byte(tok))
	if !ok || len(vals) != 1 || subtle.ConstantTimeCompare(got[:], a.want[:]) != 1 {
		return errorf(codes.Unauthenticated, "bearer token not accepted: %s", a.hint)
	}
	return nil
}

func (a *authenticator) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := a.check(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func (a *authenticator) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if err := a.check(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	return h(srv, ss)
}
