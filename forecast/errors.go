package forecast

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Error codes shared by every package of carbongate. Each transport maps them
// once at its edge (HTTP status, gRPC code, MLflow error_code).
const (
	EINVALID      = "invalid"      // the caller sent something malformed
	EINFEASIBLE   = "infeasible"   // well-formed, but no answer satisfies it
	ENOTFOUND     = "not_found"    // the named thing does not exist
	ECONFLICT     = "conflict"     // the thing already exists or changed under us
	EUNAUTHORIZED = "unauthorized" // credentials missing or wrong
	EUNAVAILABLE  = "unavailable"  // an upstream is down, not ready or too slow
	EINTERNAL     = "internal"     // a bug or an unexpected failure
)

// Error is carbongate's one error type. Message is safe to show to a client;
// Field names the offending request field when there is one; Err keeps the
// cause for logs.
type Error struct {
	Code    string
	Field   string
	Message string
	Err     error
}

func (e *Error) Error() string {
	s := e.Code
	if e.Field != "" {
		s += " " + e.Field
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// FieldErrorf returns an *Error that names the offending field.
func FieldErrorf(code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, or EINTERNAL
// for any other non-nil error, or "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the client-safe message of err: the message of the
// first *Error in its chain, or a generic text for unknown errors.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Message != "" {
		return e.Message
	}
	return "internal error"
}

// ErrorField returns the field named by the first *Error in err's chain.
func ErrorField(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Field
	}
	return ""
}

// Clip shortens s to at most n bytes (cut at a character boundary, "…"
// appended) for quoting a client's input in an error message: a message
// names what was wrong, it does not echo a megabyte back.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// ErrorSummary says in a fixed phrase what kind of failure err is, never
// its message: for notes anyone may read, such as /readyz, where a message
// could name a path, a host or a URI. Log the error itself. "" for nil.
func ErrorSummary(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	switch ErrorCode(err) {
	case EINVALID:
		return "refused as invalid"
	case EINFEASIBLE:
		return "infeasible"
	case ENOTFOUND:
		return "not found"
	case ECONFLICT:
		return "conflict"
	case EUNAUTHORIZED:
		return "access denied"
	case EUNAVAILABLE:
		return "unavailable"
	}
	return "internal error"
}
