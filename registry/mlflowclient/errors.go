package mlflowclient

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/carbongate/carbongate/forecast"
)

// errorCode maps MLflow's error_code (databricks.proto's ErrorCode) to
// carbongate's code; false for codes left to the HTTP status.
func errorCode(mlflowCode string) (string, bool) {
	switch mlflowCode {
	case "RESOURCE_DOES_NOT_EXIST", "NOT_FOUND":
		return forecast.ENOTFOUND, true
	case "RESOURCE_ALREADY_EXISTS", "ALREADY_EXISTS", "RESOURCE_CONFLICT", "ABORTED":
		return forecast.ECONFLICT, true
	case "INVALID_PARAMETER_VALUE", "MALFORMED_REQUEST", "BAD_REQUEST", "INVALID_STATE", "INVALID_REQUEST":
		return forecast.EINVALID, true
	case "UNAUTHENTICATED", "PERMISSION_DENIED", "UNAUTHORIZED":
		return forecast.EUNAUTHORIZED, true
	case "INTERNAL_ERROR", "TEMPORARILY_UNAVAILABLE", "REQUEST_LIMIT_EXCEEDED", "DEADLINE_EXCEEDED",
		// The server does not have the endpoint: it is no MLflow registry
		// (or a much older one). Not ENOTFOUND, which means "no such model".
		"ENDPOINT_NOT_FOUND":
		return forecast.EUNAVAILABLE, true
	}
	return "", false
}

// mlflowError is MLflow's error body.
type mlflowError struct {
	ErrorCode string `json:"error_code"`
	Message   string `json:"message"`
}

// APIError is the cause kept in a *forecast.Error for an error the server
// answered: its HTTP status and MLflow's error_code and message.
type APIError struct {
	Status    int
	ErrorCode string
	Message   string
}

func (e *APIError) Error() string {
	if e.ErrorCode == "" {
		return fmt.Sprintf("HTTP %d", e.Status)
	}
	return fmt.Sprintf("HTTP %d %s", e.Status, e.ErrorCode)
}

// apiError maps a non-2xx answer to a *forecast.Error whose message is the
// server's and whose Err is an *APIError.
func apiError(method, path string, status int, body []byte) error {
	var me mlflowError
	_ = json.Unmarshal(body, &me) // a body that is not MLflow's JSON: classify by status
	code, ok := errorCode(me.ErrorCode)
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		code = forecast.EUNAUTHORIZED
	case ok:
	case status >= 500 || status == http.StatusTooManyRequests || status == http.StatusRequestTimeout:
		code = forecast.EUNAVAILABLE
	case status == http.StatusNotFound && me.ErrorCode != "":
		code = forecast.ENOTFOUND
	case status == http.StatusNotFound:
		code = forecast.EUNAVAILABLE // a 404 page: no MLflow API at this URL
	case status == http.StatusConflict:
		code = forecast.ECONFLICT
	case status/100 == 4:
		code = forecast.EINVALID
	default:
		code = forecast.EUNAVAILABLE
	}
	msg := strings.TrimSpace(me.Message)
	if msg == "" {
		msg = fmt.Sprintf("%s %s answered HTTP %d", method, path, status)
		if code == forecast.EUNAVAILABLE && status == http.StatusNotFound {
			msg += ": is this an MLflow tracking server?"
		}
	}
	return &forecast.Error{Code: code, Message: "mlflow: " + msg, Err: &APIError{Status: status, ErrorCode: me.ErrorCode, Message: me.Message}}
}
