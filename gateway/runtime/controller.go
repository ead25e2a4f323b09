package runtime

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/admission"
	"github.com/carbongate/carbongate/gateway/clock"
	"github.com/carbongate/carbongate/gateway/controller"
	"github.com/carbongate/carbongate/gateway/hold"
	"github.com/carbongate/carbongate/gateway/kserve"
	"github.com/carbongate/carbongate/models/ledger"
)

// Controller runs carbongate's Kubernetes controller in the same process
// (--controller): it releases held Jobs and Pods and creates scheduled
// VmTemplates' provider objects at their time, with leader election; with
// --admission the webhook then also holds the Jobs and bare Pods that opted
// in (package hold).
type Controller struct {
	Enabled         bool          // --controller
	Namespace       string        // --controller-namespace: the Lease's
	LeaseDuration   time.Duration // --leader-lease-duration
	RenewDeadline   time.Duration // --leader-renew-deadline
	RetryPeriod     time.Duration // --leader-retry-period
	ClusterProvider string        // --cluster-provider
	ClusterRegion   string        // --cluster-region
	HoldDuration    time.Duration // --hold-duration
	HoldMaxDelay    time.Duration // --hold-max-delay
	HoldMode        string        // --hold-mode: enforce or shadow
	QPS             float64       // --kube-qps
	Burst           int           // --kube-burst
	DecisionKey     string        // --decision-key-file
	VMKinds         string        // --vm-kinds
	Redecide        bool          // --redecide
	RedecideGain    float64       // --redecide-gain
	ScheduleAhead   time.Duration // --karmada-schedule-ahead
}

// controllerPart is the Controller of a running carbongate.
type controllerPart struct {
	*Controller
	signer *hold.Signer

	ctl    *controller.Controller
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// check validates the flags.
func (c *Controller) check() error {
	if !c.Enabled {
		return nil
	}
	if _, err := controller.ParseVMKinds(c.VMKinds); err != nil {
		return fmt.Errorf("--vm-kinds: %w", err)
	}
	switch {
	case c.Namespace == "":
		return errors.New("--controller-namespace must not be empty")
	case !(c.RetryPeriod > 0 && c.RetryPeriod < c.RenewDeadline && c.RenewDeadline < c.LeaseDuration):
		return fmt.Errorf("want 0 < --leader-retry-period < --leader-renew-deadline < --leader-lease-duration, got %v, %v, %v", c.RetryPeriod, c.RenewDeadline, c.LeaseDuration)
	case !(c.QPS > 0) || c.Burst < 1:
		return fmt.Errorf("--kube-qps must be positive and --kube-burst at least 1, got %v and %d", c.QPS, c.Burst)
	case c.HoldDuration <= 0 || c.HoldMaxDelay < 0:
		return fmt.Errorf("--hold-duration must be positive and --hold-max-delay not negative, got %v and %v", c.HoldDuration, c.HoldMaxDelay)
	case !(c.RedecideGain > 0 && c.RedecideGain < 1):
		return fmt.Errorf("--redecide-gain must be between 0 and 1 (exclusive), got %v", c.RedecideGain)
	case c.ScheduleAhead < 0:
		return fmt.Errorf("--karmada-schedule-ahead must not be negative, got %v", c.ScheduleAhead)
	case c.HoldMode != hold.ModeEnforce && c.HoldMode != hold.ModeShadow:
		return fmt.Errorf("--hold-mode must be %s or %s, got %q", hold.ModeEnforce, hold.ModeShadow, c.HoldMode)
	}
	return nil
}

// open builds the controller (it starts in start).
//
// The ledger charges released workloads at obs: the store's observed
// signals when one is configured, else the data the gateway serves.
func (c *controllerPart) open(m *Runtime, clk clock.Clock, reg prometheus.Registerer, obs ledger.Observations) error {
	if !c.Enabled {
		return nil
	}
	cfg, err := kserve.RESTConfig(m.Discovery.Kubeconfig)
	if err != nil {
		return fmt.Errorf("--controller: %s", forecast.ErrorMessage(err))
	}
	if c.signer, err = c.loadSigner(m); err != nil {
		return err
	}
	kinds, err := controller.ParseVMKinds(c.VMKinds)
	if err != nil {
		return fmt.Errorf("--vm-kinds: %w", err)
	}
	// With --karmada-kubeconfig the webhook holds the bindings it places
	// and the controller releases them there.
	var fed *rest.Config
	if k := m.Admission.KarmadaKubeconfig; k != "" {
		if fed, err = karmadaREST(m, k); err != nil {
			return err
		}
	}
	c.ctl, err = controller.New(controller.Config{
		REST: cfg, Clock: clk, LeaseNamespace: c.Namespace, Rescheduler: m.gw.Service, Redecide: c.Redecide, Federation: fed,
		LeaseDuration: c.LeaseDuration, RenewDeadline: c.RenewDeadline, RetryPeriod: c.RetryPeriod,
		QPS: float32(c.QPS), Burst: c.Burst,
		Registerer: reg, Logger: m.Logger, Signer: c.signer, VMKinds: kinds, Observed: obs,
		RedecideGain: c.RedecideGain, ScheduleAhead: c.ScheduleAhead,
	})
	return err
}

// loadSigner reads --decision-key-file (surrounding whitespace is not
// part of the key), or makes a random key for this process.
func (c *controllerPart) loadSigner(m *Runtime) (*hold.Signer, error) {
	if c.DecisionKey == "" {
		key := make([]byte, hold.MinKeyBytes)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("--decision-key-file: making a random key: %w", err)
		}
		m.Logger.Warn("no --decision-key-file: held workloads' decisions are signed with a key of this process only; after a restart, or on another replica, they are released at once and not credited")
		return hold.NewSigner(key)
	}
	b, err := os.ReadFile(c.DecisionKey)
	if err != nil {
		return nil, fmt.Errorf("--decision-key-file: %w", err)
	}
	s, err := hold.NewSigner(bytes.TrimSpace(b))
	if err != nil {
		return nil, fmt.Errorf("--decision-key-file %s: %w", c.DecisionKey, err)
	}
	return s, nil
}

// workloads is the webhook's configuration for Jobs and Pods: off without
// the controller.
func (c *controllerPart) workloads(clk clock.Clock) admission.Workloads {
	if c.ctl == nil {
		return admission.Workloads{}
	}
	return admission.Workloads{Cluster: c.ctl.Cluster(), Provider: c.ClusterProvider, Region: c.ClusterRegion,
		Duration: c.HoldDuration, MaxDelay: c.HoldMaxDelay, Now: clk.Now, Signer: c.signer,
		Shadow: c.HoldMode == hold.ModeShadow}
}

// start runs the controller until close; a failure is reported on done.
func (c *controllerPart) start(m *Runtime) {
	if c.ctl == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if err := c.ctl.Start(ctx); err != nil && ctx.Err() == nil {
			select {
			case m.done <- fmt.Errorf("controller: %w", err):
			default:
			}
		}
	}()
}

// close stops the controller, releasing the Lease.
func (c *controllerPart) close() {
	if c.cancel != nil {
		c.cancel()
		c.wg.Wait()
	}
}
