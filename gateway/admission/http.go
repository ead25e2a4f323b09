package admission

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/labstack/echo/v5"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/httpedge"
	"github.com/carbongate/carbongate/internal/strictjson"
)

// Path is the route of the webhook.
const Path = "/v1/admission/mutate"

// DefaultMaxBody bounds an AdmissionReview: it carries the object and, on
// UPDATE, the old object, each up to the API server's 1.5 MiB.
const DefaultMaxBody = 3 << 20

// Register adds POST Path to e. It answers an AdmissionReview v1 with an
// AdmissionReview v1 whose response carries the decision (status 200, even
// for a denial). A request it cannot read as an AdmissionReview v1 is
// answered with an error, never a review: 400 (malformed JSON, wrong
// apiVersion or kind, no request or uid), 401 (no verified client
// certificate when RequireClientCert), 413 (larger than MaxBody) or 415
// (not JSON). Errors are returned for e's error handler to render.
func (w *Webhook) Register(e *echo.Echo) { e.POST(Path, w.handle) }

func (w *Webhook) handle(c *echo.Context) error {
	r := c.Request()
	if w.cfg.RequireClientCert && (r.TLS == nil || len(r.TLS.VerifiedChains) == 0) {
		return echo.NewHTTPError(http.StatusUnauthorized, "a client certificate signed by the admission client CA is required")
	}
	if ct := r.Header.Get(echo.HeaderContentType); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != echo.MIMEApplicationJSON {
			return echo.NewHTTPError(http.StatusUnsupportedMediaType, "Content-Type must be application/json")
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), r.Body, w.cfg.MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return echo.NewHTTPError(http.StatusRequestEntityTooLarge, fmt.Sprintf("AdmissionReview is larger than %d bytes", w.cfg.MaxBody))
		}
		return forecast.FieldErrorf(forecast.EINVALID, "body", "cannot read the request body")
	}
	review, err := DecodeReview(body)
	if err != nil {
		return err
	}
	id := c.Response().Header().Get(httpedge.HeaderRequestID)
	review.Response = w.Admit(r.Context(), review.Request, id)
	review.Request = nil
	return c.JSON(http.StatusOK, review)
}

// DecodeReview parses an AdmissionReview v1 and checks its envelope:
// apiVersion admission.k8s.io/v1, kind AdmissionReview, a request with a
// uid, a kind and an operation (the API server always sends them). Errors
// are EINVALID naming the field ("body" for malformed JSON).
func DecodeReview(body []byte) (*admissionv1.AdmissionReview, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "body", "empty request body: want an AdmissionReview (admission.k8s.io/v1)")
	}
	var rv admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &rv); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, &forecast.Error{Code: forecast.EINVALID, Field: te.Field, Err: err,
				Message: fmt.Sprintf("malformed AdmissionReview: %s must not be JSON %s", te.Field, te.Value)}
		}
		return nil, &forecast.Error{Code: forecast.EINVALID, Field: "body", Err: err,
			Message: "malformed AdmissionReview: the body is not a JSON object of that shape"}
	}
	if err := strictjson.Check(body); err != nil {
		return nil, err
	}
	gv := admissionv1.SchemeGroupVersion.String()
	switch {
	case rv.APIVersion != gv:
		return nil, forecast.FieldErrorf(forecast.EINVALID, "apiVersion", "apiVersion is %q, want %q (list only v1 in admissionReviewVersions)", rv.APIVersion, gv)
	case rv.Kind != "AdmissionReview":
		return nil, forecast.FieldErrorf(forecast.EINVALID, "kind", "kind is %q, want \"AdmissionReview\"", rv.Kind)
	case rv.Request == nil:
		return nil, forecast.FieldErrorf(forecast.EINVALID, "request", "the AdmissionReview has no request")
	case rv.Request.UID == "":
		return nil, forecast.FieldErrorf(forecast.EINVALID, "request.uid", "the AdmissionReview's request has no uid")
	case rv.Request.Kind.Kind == "":
		return nil, forecast.FieldErrorf(forecast.EINVALID, "request.kind", "the AdmissionReview's request has no kind")
	case rv.Request.Operation == "":
		return nil, forecast.FieldErrorf(forecast.EINVALID, "request.operation", "the AdmissionReview's request has no operation")
	}
	return &rv, nil
}

//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the OpenAPI fragment describing the webhook route, to be
// merged into the gateway's document when the route is served.
func OpenAPI() []byte { return bytes.Clone(openAPI) }
