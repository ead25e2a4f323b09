package oipgrpc

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/oip"
)

// The one table between gRPC status codes and domain error codes.
//
//	domain        server answers      client reads
//	EINVALID      InvalidArgument     InvalidArgument, Unimplemented (message says so)
//	ENOTFOUND     NotFound            NotFound
//	EUNAVAILABLE  Unavailable         Unavailable, DeadlineExceeded, ResourceExhausted,
//	                                  Aborted, Canceled, FailedPrecondition
//	EUNAUTHORIZED Unauthenticated     Unauthenticated, PermissionDenied
//	other         Internal            any other code: EINTERNAL
//
// The server sends only the client-safe message (forecast.ErrorMessage);
// a context error from the Backend becomes DeadlineExceeded or Canceled.
var codeOf = map[string]codes.Code{
	forecast.EINVALID:      codes.InvalidArgument,
	forecast.ENOTFOUND:     codes.NotFound,
	forecast.EUNAVAILABLE:  codes.Unavailable,
	forecast.EUNAUTHORIZED: codes.Unauthenticated,
}

var domainOf = map[codes.Code]string{
	codes.InvalidArgument:    forecast.EINVALID,
	codes.Unimplemented:      forecast.EINVALID,
	codes.NotFound:           forecast.ENOTFOUND,
	codes.Unavailable:        forecast.EUNAVAILABLE,
	codes.DeadlineExceeded:   forecast.EUNAVAILABLE,
	codes.ResourceExhausted:  forecast.EUNAVAILABLE,
	codes.Aborted:            forecast.EUNAVAILABLE,
	codes.Canceled:           forecast.EUNAVAILABLE,
	codes.FailedPrecondition: forecast.EUNAVAILABLE, // "model not ready" on some servers
	codes.Unauthenticated:    forecast.EUNAUTHORIZED,
	codes.PermissionDenied:   forecast.EUNAUTHORIZED,
}

// toStatus renders a Backend error as a gRPC status error. The bool says
// whether the error is unexpected (EINTERNAL) and should be logged.
func toStatus(err error) (error, bool) {
	var de *forecast.Error
	if !errors.As(err, &de) {
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			return status.Error(codes.DeadlineExceeded, "deadline exceeded"), false
		case errors.Is(err, context.Canceled):
			return status.Error(codes.Canceled, "canceled"), false
		}
	}
	if c, ok := codeOf[forecast.ErrorCode(err)]; ok {
		return status.Error(c, forecast.ErrorMessage(err)), false
	}
	return status.Error(codes.Internal, "internal error"), true
}

// fromStatus turns the error of an RPC into a *forecast.Error whose chain
// holds the gRPC status error and, when the call ended because of its
// context or a deadline, the context error (so errors.Is(err,
// context.DeadlineExceeded) holds).
func fromStatus(ctx context.Context, rpc string, err error) error {
	st := status.Convert(err)
	code, ok := domainOf[st.Code()]
	if !ok {
		code = forecast.EINTERNAL
	}
	msg := st.Message()
	if st.Code() == codes.InvalidArgument && oip.NotReadyText(msg) {
		// MLServer answers a model that is still loading with
		// InvalidArgument "Model m ... is not ready yet."
		code = forecast.EUNAVAILABLE
	}
	switch st.Code() {
	case codes.Unimplemented:
		msg = "server does not implement " + rpc + ": " + msg
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted, codes.Canceled:
		msg = rpc + ": " + msg
	}
	cause := err
	if cerr := ctx.Err(); cerr != nil {
		cause = fmt.Errorf("%w: %w", cerr, err)
	} else if st.Code() == codes.DeadlineExceeded {
		cause = fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
	}
	return &forecast.Error{Code: code, Message: msg, Err: cause}
}
