package command

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// exitError is a result already printed that still is not success: a
// drain or close that did not finish before its timeout (ExitIncomplete),
// an unhealthy etcd in status (ExitUnavailable).
type exitError struct {
	msg  string
	code int
}

func (e exitError) Error() string { return e.msg }

func incomplete(msg string) error { return exitError{msg, ExitIncomplete} }

// failed reports err (nil: success) on stderr in words that say what to
// do, and returns the exit code scripts see.
func (c *call) failed(err error) int {
	if err == nil {
		return ExitOK
	}
	var ue usageErr
	if errors.As(err, &ue) {
		return usageError(c.e, c.name, ue.error)
	}
	var se setupErr
	if errors.As(err, &se) {
		fmt.Fprintf(c.e.stderr, "smbctl %s: %v\n", c.name, se.error)
		return ExitUsage
	}
	var xe exitError
	if errors.As(err, &xe) {
		fmt.Fprintf(c.e.stderr, "smbctl %s: %s\n", c.name, xe.msg)
		return xe.code
	}
	st, ok := status.FromError(err)
	if !ok {
		fmt.Fprintf(c.e.stderr, "smbctl %s: %v\n", c.name, err)
		return ExitError
	}
	msg, code := c.describe(st)
	fmt.Fprintf(c.e.stderr, "smbctl %s: %s\n", c.name, msg)
	return code
}

// describe turns a gRPC status into a message and an exit code.
func (c *call) describe(st *status.Status) (string, int) {
	msg, ep := st.Message(), c.conn.endpoint
	switch st.Code() {
	case codes.NotFound:
		if c.noun.listHint != "" {
			msg += " (" + c.noun.listHint + ")"
		}
		return msg, ExitNotFound
	case codes.Unauthenticated:
		if c.conn.token == "" {
			return "unauthenticated: " + msg + " (smbctl had no token to send: set --token-file or SMBCTL_TOKEN)", ExitAuth
		}
		return "unauthenticated: " + msg + " (check --token, --token-file or SMBCTL_TOKEN)", ExitAuth
	case codes.PermissionDenied:
		return "permission denied: " + msg, ExitAuth
	case codes.InvalidArgument:
		return msg, ExitUsage
	case codes.AlreadyExists, codes.FailedPrecondition, codes.Aborted:
		return msg, ExitConflict
	case codes.DeadlineExceeded:
		return fmt.Sprintf("the coordinator at %s did not answer within %v (--request-timeout): %s", ep, c.conn.timeout, msg), ExitUnavailable
	case codes.Canceled:
		return "interrupted", ExitError
	case codes.Unimplemented:
		return fmt.Sprintf("the coordinator at %s does not know this request (%s): is smbcoord older than smbctl %s?", ep, msg, Version), ExitError
	case codes.Unavailable:
		return c.unavailable(msg), ExitUnavailable
	}
	return msg, ExitError
}

// unavailable tells an unreachable coordinator from a TLS mismatch and
// from a coordinator whose etcd is down.
func (c *call) unavailable(msg string) string {
	ep := c.conn.endpoint
	if err := c.conn.lastDialErr(); err != nil {
		return fmt.Sprintf("cannot reach the coordinator at %s: %v: is smbcoord running? (--endpoint, SMBCTL_ENDPOINT)", ep, err)
	}
	if strings.Contains(msg, "handshake") || strings.Contains(msg, "tls:") || strings.Contains(msg, "x509") {
		return fmt.Sprintf("TLS with the coordinator at %s failed: %s: give its CA with --ca, or --insecure for a loopback coordinator run with --dev-loopback-insecure", ep, msg)
	}
	if strings.Contains(msg, "connection error") || strings.Contains(msg, "preface") || strings.Contains(msg, "EOF") {
		return fmt.Sprintf("the coordinator at %s closed the connection (%s): if it serves TLS, drop --insecure and give --ca", ep, msg)
	}
	return fmt.Sprintf("coordinator at %s: %s", ep, msg)
}
