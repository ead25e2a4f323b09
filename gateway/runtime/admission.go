package runtime

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/carbongate/carbongate/gateway/admission"
	"github.com/carbongate/carbongate/gateway/httpapi"
)

// Admission configures carbongate as the Kubernetes mutating admission
// webhook of VmTemplates (POST /v1/admission/mutate) and the server's TLS.
// With TLSCert and TLSKey every route is served over HTTPS (TLS 1.2 or
// later); the API server only calls webhooks over HTTPS.
type Admission struct {
	Enabled  bool          // --admission
	FailOpen bool          // --admission-fail-open
	Timeout  time.Duration // --admission-timeout: bound of the scheduling call
	TLSCert  string        // --tls-cert: PEM certificate (chain); "" = plain HTTP
	TLSKey   string        // --tls-key: PEM private key of TLSCert
	ClientCA string        // --admission-client-ca: PEM CA bundle the webhook's callers' certificates must chain to
	MaxBody  int64         // --max-body: largest AdmissionReview, bytes
	// KarmadaKubeconfig (--karmada-kubeconfig), when set, makes the
	// webhook place the ResourceBindings of that Karmada API server
	// (federation.go).
	KarmadaKubeconfig string
	// Now is the clock certificates are checked against; nil: time.Now.
	Now func() time.Time
	// Bundle is the OPA bundle's data the webhook decides with (regions,
	// zones, EU membership, latencies): opa.Admission{}, handed in by
	// the binary so that the runtime does not import the deployment tree.
	// Required with Enabled.
	Bundle admission.BundleSource
}

// admissionPart is the Admission of a running carbongate.
type admissionPart struct {
	*Admission
	tls *tls.Config // set by load when TLS is configured
	fed federationPart
}

// load checks the flags and loads the TLS material, so that a bad
// certificate stops the program at startup with a clear message. Later
// failures to reload the certificate are logged to log.
func (a *admissionPart) load(log *slog.Logger) error {
	switch {
	case (a.TLSCert == "") != (a.TLSKey == ""):
		return errors.New("--tls-cert and --tls-key go together: give both or neither")
	case a.ClientCA != "" && a.TLSCert == "":
		return errors.New("--admission-client-ca needs --tls-cert and --tls-key: client certificates only exist over TLS")
	case a.ClientCA != "" && !a.Enabled:
		return errors.New("--admission-client-ca protects the webhook route: it needs --admission")
	case a.KarmadaKubeconfig != "" && !a.Enabled:
		return errors.New("--karmada-kubeconfig places the bindings the webhook route receives: it needs --admission")
	case a.FailOpen && !a.Enabled:
		return errors.New("--admission-fail-open needs --admission")
	case a.Timeout < 0 || a.Timeout >= httpapi.DefaultRequestTimeout:
		return fmt.Errorf("--admission-timeout must be positive and under the request timeout %v, got %v", httpapi.DefaultRequestTimeout, a.Timeout)
	case a.MaxBody < 0:
		return fmt.Errorf("--max-body must be positive, got %d", a.MaxBody)
	}
	if a.TLSCert == "" {
		return nil
	}
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	kp, err := loadKeyPair(a.TLSCert, a.TLSKey, now())
	if err != nil {
		return err
	}
	r := &reloader{cert: a.TLSCert, key: a.TLSKey, now: now, current: kp, checked: now(),
		onError: func(err error) { log.Warn("reloading the TLS certificate; keeping the previous one", "error", err) }}
	a.tls = &tls.Config{
		MinVersion:     tls.VersionTLS12,
		NextProtos:     []string{"h2", "http/1.1"},
		GetCertificate: r.get,
	}
	if a.ClientCA != "" {
		pem, err := os.ReadFile(a.ClientCA)
		if err != nil {
			return fmt.Errorf("--admission-client-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--admission-client-ca %s: no PEM certificate in it", a.ClientCA)
		}
		a.tls.ClientCAs = pool
		// Other routes (probes, metrics) take no certificate; the webhook
		// route refuses requests without a verified one.
		a.tls.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return nil
}

// loadKeyPair reads and checks a certificate and its key: both readable,
// the key matching the certificate, the certificate valid at now.
func loadKeyPair(certFile, keyFile string, now time.Time) (*tls.Certificate, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-key: %w", err)
	}
	kp, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert %s / --tls-key %s: not a matching PEM certificate and private key: %w", certFile, keyFile, err)
	}
	leaf := kp.Leaf
	switch {
	case now.After(leaf.NotAfter):
		return nil, fmt.Errorf("--tls-cert %s: the certificate expired at %s", certFile, leaf.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(leaf.NotBefore):
		return nil, fmt.Errorf("--tls-cert %s: the certificate is not valid before %s", certFile, leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	return &kp, nil
}

// reloader serves the certificate files' current content: it looks at
// most once a minute and keeps the previous pair when the new one does
// not load (a renewal writes the two files one after the other).
type reloader struct {
	cert, key string
	now       func() time.Time

	onError func(error)

	mu      sync.Mutex
	current *tls.Certificate
	checked time.Time
}

const reloadEvery = time.Minute

func (r *reloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := r.now(); now.Sub(r.checked) >= reloadEvery {
		r.checked = now
		if kp, err := loadKeyPair(r.cert, r.key, now); err == nil {
			r.current = kp
		} else {
			r.onError(err)
		}
	}
	return r.current, nil
}

// listener serves TLS on ln when it is configured.
func (a *admissionPart) listener(ln net.Listener) net.Listener {
	if a.tls == nil {
		return ln
	}
	return tls.NewListener(ln, a.tls)
}

// scheme is the scheme the server answers on.
func (a *admissionPart) scheme() string {
	if a.tls != nil {
		return "https"
	}
	return "http"
}

// openAPI is the fragment describing the webhook route when it is served.
func (a *Admission) openAPI() []byte {
	if !a.Enabled {
		return nil
	}
	return admission.OpenAPI()
}

// mount adds the webhook route to next's routes, when enabled.
func (a *admissionPart) mount(m *Runtime, next func(*echo.Echo)) (func(*echo.Echo), error) {
	if !a.Enabled {
		return next, nil
	}
	if a.tls == nil {
		m.Logger.Warn("admission webhook served over plain HTTP: the API server only calls webhooks over HTTPS; set --tls-cert and --tls-key unless a proxy terminates TLS")
	}
	if a.Bundle == nil {
		return nil, errors.New("runtime: Admission.Bundle is not set (the OPA bundle's data)")
	}
	data, err := admission.Bundle(a.Bundle)
	if err != nil {
		return nil, fmt.Errorf("admission data: %w", err)
	}
	wl := m.controller.workloads(m.clk)
	bindings, err := a.fed.open(m, a.KarmadaKubeconfig, &wl)
	if err != nil {
		return nil, err
	}
	w, err := admission.New(admission.Config{
		Scheduler: m.gw.Service, Data: data, FailOpen: a.FailOpen, Timeout: a.Timeout,
		MaxBody: a.MaxBody, RequireClientCert: a.ClientCA != "", Logger: m.Logger, Registerer: m.reg,
		Workloads: wl, Bindings: bindings,
	})
	if err != nil {
		a.fed.close()
		return nil, err
	}
	m.Logger.Info("admission webhook enabled", "path", admission.Path, "fail_open", a.FailOpen,
		"timeout", a.Timeout.String(), "client_ca", a.ClientCA != "", "tls", a.tls != nil)
	m.routes = append(m.routes, w.Route())
	return func(e *echo.Echo) {
		if next != nil {
			next(e)
		}
		w.Register(e)
	}, nil
}
