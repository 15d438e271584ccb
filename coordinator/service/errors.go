package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/smbcluster/smbcluster/coordinator/store"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// apiError is an error a handler made on purpose, with its gRPC code;
// storeError passes it through unchanged.
type apiError struct{ s *status.Status }

func (e *apiError) Error() string              { return e.s.Message() }
func (e *apiError) GRPCStatus() *status.Status { return e.s }

func errorf(c codes.Code, format string, args ...any) error {
	return &apiError{status.Newf(c, format, args...)}
}

// invalid reports bad input.
func invalid(err error) error { return &apiError{status.New(codes.InvalidArgument, err.Error())} }

func invalidf(format string, args ...any) error {
	return errorf(codes.InvalidArgument, format, args...)
}

// storeError maps an error from the store about what (e.g. `share "data"`)
// to a gRPC status with a message that says what to do.
func storeError(err error, what string) error {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, store.ErrNotFound):
		return errorf(codes.NotFound, "%s not found", what)
	case errors.Is(err, store.ErrExists):
		return errorf(codes.AlreadyExists, "%s already exists", what)
	case errors.Is(err, store.ErrConflict):
		return errorf(codes.FailedPrecondition, "%s changed since it was read: read it again and retry", what)
	case errors.Is(err, context.DeadlineExceeded):
		return errorf(codes.DeadlineExceeded, "%s: etcd did not answer in time", what)
	case errors.Is(err, context.Canceled):
		return errorf(codes.Canceled, "%s: request canceled", what)
	}
	return errorf(codes.Unavailable, "%s: etcd: %v (is etcd reachable from the coordinator?)", what, err)
}

// quote names a thing in messages: kind "name".
func quote(kind, name string) string { return fmt.Sprintf("%s %q", kind, name) }
