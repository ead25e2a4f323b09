package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v5"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway"
	"github.com/carbongate/carbongate/gateway/httpedge"
)

// shedError is the scheduling error of a review shed for overload.
type shedError struct{ err error }

func (e shedError) Error() string { return e.err.Error() }
func (e shedError) Unwrap() error { return e.err }

// shedScheduler answers every call with its error, at once.
type shedScheduler struct{ err error }

func (s shedScheduler) Schedule(context.Context, gateway.Request) (gateway.Decision, error) {
	return gateway.Decision{}, s.err
}

// Route returns how the gateway's HTTP server treats the webhook route:
// its body limit, and Shed for reviews shed for overload.
func (w *Webhook) Route() httpedge.Route {
	return httpedge.Route{Prefix: Path, MaxBody: w.cfg.MaxBody, Shed: w.Shed}
}

// Shed answers a review the server sheds for overload (reason, code
// unavailable) with an AdmissionReview, never a bare 503, which an API
// server whose webhook has failurePolicy: Fail turns into a denial
// without a reason: the review is decided as when scheduling is
// unavailable, so a VmTemplate is admitted unscheduled with a warning
// under FailOpen and denied with 503 and the reason otherwise; other kinds
// are admitted unchanged. When the body could not be read whole (the body
// budget was spent), the uid is taken from the part read and the review
// answered without a patch; only a body whose first part holds no uid
// gets the plain 503.
func (w *Webhook) Shed(c *echo.Context, reason error) error {
	err := shedError{forecast.Errorf(forecast.EUNAVAILABLE, "%s", forecast.ErrorMessage(reason))}
	body, complete := httpedge.Body(c)
	id := c.Response().Header().Get(httpedge.HeaderRequestID)
	if !complete {
		uid := scanUID(body)
		if uid == "" {
			return reason
		}
		o := w.failed(err, object{})
		o.patch = nil
		return respond(c, uid, o)
	}
	review, derr := DecodeReview(body)
	if derr != nil {
		return derr
	}
	return respond(c, review.Request.UID, w.decide(c.Request().Context(), review.Request, id, shedScheduler{err}))
}

// respond writes the AdmissionReview of o for uid.
func respond(c *echo.Context, uid types.UID, o outcome) error {
	review := admissionv1.AdmissionReview{Response: o.response(uid)}
	review.APIVersion, review.Kind = admissionv1.SchemeGroupVersion.String(), "AdmissionReview"
	return c.JSON(http.StatusOK, review)
}

// scanUID returns request.uid of an AdmissionReview from a prefix of its
// JSON, or "" if the prefix does not reach it. The API server writes the
// uid first in the request, so a few hundred bytes suffice.
func scanUID(prefix []byte) types.UID {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	var uid string
	if !member(dec, "request") || !member(dec, "uid") || dec.Decode(&uid) != nil {
		return ""
	}
	return types.UID(uid)
}

// member reads an object's opening brace and its members up to the value
// of key, false if it ends first or is not an object.
func member(dec *json.Decoder, key string) bool {
	if !enter(dec) {
		return false
	}
	for {
		k, ok := nextKey(dec)
		if !ok {
			return false
		}
		if k == key {
			return true
		}
		if skip(dec) != nil {
			return false
		}
	}
}

// enter reads the opening brace of an object.
func enter(dec *json.Decoder) bool {
	t, err := dec.Token()
	return err == nil && t == json.Delim('{')
}

// nextKey reads the next key of an object, false at its end or an error.
func nextKey(dec *json.Decoder) (string, bool) {
	t, err := dec.Token()
	if err != nil {
		return "", false
	}
	k, ok := t.(string)
	return k, ok
}

// skip reads one value.
func skip(dec *json.Decoder) error { return dec.Decode(new(json.RawMessage)) }
