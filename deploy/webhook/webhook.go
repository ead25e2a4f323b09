// Package webhook renders mutatingwebhookconfiguration.yaml, the
// registration of carbongate's own VmTemplate admission webhook, ready to
// apply: the file's ${CA_BUNDLE} placeholder (which the API server rejects
// as illegal base64) filled with a CA certificate, and optionally the
// Service replaced by a URL or the failure policy changed.
package webhook

import (
	"bytes"
	"crypto/x509"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/url"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"

	"github.com/carbongate/carbongate/forecast"
)

// Manifest is mutatingwebhookconfiguration.yaml as shipped.
//
//go:embed mutatingwebhookconfiguration.yaml
var Manifest []byte

// Placeholder stands for the base64 CA bundle in Manifest.
const Placeholder = "${CA_BUNDLE}"

// The webhooks of Manifest: VmTemplates, and the Jobs and Pods carbongate
// holds (package gateway/hold; acted on only with carbongate --controller).
const (
	VmTemplatesName = "schedule.vmtemplates.carbongate.io"
	WorkloadsName   = "hold.workloads.carbongate.io"
)

// Config is what Render fills in.
type Config struct {
	// CABundle is the PEM of the CA certificate(s) that signed carbongate's
	// serving certificate (required; certificates only).
	CABundle []byte
	// URL, when set, replaces clientConfig.service: the https URL of a
	// webhook the API server reaches directly (e.g. outside the cluster).
	URL string
	// FailurePolicy, when set, replaces the VmTemplate webhook's (Fail):
	// Fail or Ignore. The workload webhook's stays Ignore: carbongate never
	// blocks a Job or Pod.
	FailurePolicy string
}

// Configuration returns Manifest with cfg applied, decoded strictly.
// Errors are EINVALID naming the field (ca_bundle, url, failure_policy).
func Configuration(cfg Config) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	m, err := render(cfg)
	if err != nil {
		return nil, err
	}
	return decode(m)
}

// Render returns Manifest with cfg applied as YAML, ready for kubectl
// apply -f -. Errors are those of Configuration.
func Render(cfg Config) ([]byte, error) {
	m, err := render(cfg)
	if err != nil {
		return nil, err
	}
	if _, err := decode(m); err != nil {
		return nil, err
	}
	return yaml.Marshal(m)
}

// decode checks that m is a MutatingWebhookConfiguration with no unknown
// field.
func decode(m map[string]any) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var c admissionregistrationv1.MutatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return nil, &forecast.Error{Code: forecast.EINTERNAL, Message: "the embedded webhook configuration does not decode", Err: err}
	}
	return &c, nil
}

// render fills the placeholder and applies URL and FailurePolicy to the
// manifest as a generic object (so that no field the file does not set
// appears in the output).
func render(cfg Config) (map[string]any, error) {
	if err := checkBundle(cfg.CABundle); err != nil {
		return nil, err
	}
	switch cfg.FailurePolicy {
	case "", string(admissionregistrationv1.Fail), string(admissionregistrationv1.Ignore):
	default:
		return nil, forecast.FieldErrorf(forecast.EINVALID, "failure_policy", "failure policy %q is not Fail or Ignore", cfg.FailurePolicy)
	}
	if cfg.URL != "" {
		if err := checkURL(cfg.URL); err != nil {
			return nil, err
		}
	}
	field := []byte("caBundle: " + Placeholder)
	if bytes.Count(Manifest, field) == 0 {
		return nil, &forecast.Error{Code: forecast.EINTERNAL, Message: "the embedded webhook configuration has no " + string(field)}
	}
	filled := bytes.ReplaceAll(Manifest, field, []byte("caBundle: "+base64.StdEncoding.EncodeToString(cfg.CABundle)))
	var m map[string]any
	if err := yaml.Unmarshal(filled, &m); err != nil {
		return nil, &forecast.Error{Code: forecast.EINTERNAL, Message: "the embedded webhook configuration does not parse", Err: err}
	}
	hooks, _ := m["webhooks"].([]any)
	for _, h := range hooks {
		h, ok := h.(map[string]any)
		if !ok {
			continue
		}
		if cfg.FailurePolicy != "" && h["name"] == VmTemplatesName {
			h["failurePolicy"] = cfg.FailurePolicy
		}
		if cc, ok := h["clientConfig"].(map[string]any); ok && cfg.URL != "" {
			delete(cc, "service")
			cc["url"] = cfg.URL
		}
	}
	return m, nil
}

// checkBundle wants one or more PEM certificates and nothing else (a
// private key given by mistake must not end up in a cluster object).
func checkBundle(b []byte) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return forecast.FieldErrorf(forecast.EINVALID, "ca_bundle", "a CA bundle (PEM certificates) is required")
	}
	n := 0
	for rest := b; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			if len(bytes.TrimSpace(rest)) > 0 {
				return forecast.FieldErrorf(forecast.EINVALID, "ca_bundle", "the CA bundle holds something other than PEM blocks")
			}
			break
		}
		if block.Type != "CERTIFICATE" {
			return forecast.FieldErrorf(forecast.EINVALID, "ca_bundle", "the CA bundle holds a %s block; give only the CA's certificate", block.Type)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return forecast.FieldErrorf(forecast.EINVALID, "ca_bundle", "certificate %d of the CA bundle does not parse: %v", n+1, err)
		}
		n++
	}
	if n == 0 {
		return forecast.FieldErrorf(forecast.EINVALID, "ca_bundle", "no PEM certificate in the CA bundle")
	}
	return nil
}

// checkURL applies the API server's rules for clientConfig.url: https,
// a host, no user info, query or fragment.
func checkURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return forecast.FieldErrorf(forecast.EINVALID, "url", "webhook URL %q does not parse", s)
	case u.Scheme != "https" || u.Host == "":
		return forecast.FieldErrorf(forecast.EINVALID, "url", "webhook URL %q must be https://host[:port]/path", s)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return forecast.FieldErrorf(forecast.EINVALID, "url", "webhook URL %q may not hold user info, a query or a fragment", s)
	}
	return nil
}
