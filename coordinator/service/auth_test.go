package service

import (
	"context"
	"testing"

	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
)

func TestAuthRefusesMissingAndWrongTokens(t *testing.T) {
	e := newEnv(t)
	calls := map[string]context.Context{
		"no token":     t.Context(),
		"wrong token":  metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testToken+"x"),
		"prefix token": metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testToken[:5]),
		"no scheme":    metadata.AppendToOutgoingContext(t.Context(), "authorization", testToken),
		"basic scheme": metadata.AppendToOutgoingContext(t.Context(), "authorization", "Basic "+testToken),
		"empty bearer": metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "),
		"two tokens":   metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer x", "authorization", "Bearer "+testToken),
		"other header": metadata.AppendToOutgoingContext(t.Context(), "token", testToken),
	}
	for name, ctx := range calls {
		_, err := e.shares.ListShares(ctx, &adminv1.ListSharesRequest{})
		wantCode(t, err, codes.Unauthenticated, name+": ListShares")
		_, err = e.users.CreateUser(ctx, &adminv1.CreateUserRequest{Name: "mallory", Password: "p"})
		wantCode(t, err, codes.Unauthenticated, name+": CreateUser")
		_, err = e.cluster.GetStatus(ctx, &adminv1.GetStatusRequest{})
		wantCode(t, err, codes.Unauthenticated, name+": GetStatus")
	}
	if _, err := e.users.ListUsers(e.ctx, &adminv1.ListUsersRequest{}); err != nil {
		t.Fatalf("with the token: %v", err)
	}
	h, err := e.cluster.Health(t.Context(), &adminv1.HealthRequest{})
	if err != nil || !h.Serving {
		t.Errorf("Health without a token = %v, %v", h, err)
	}
}
