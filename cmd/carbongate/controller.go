package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/admission"
	"github.com/carbongate/carbongate/gateway/clock"
	"github.com/carbongate/carbongate/gateway/controller"
	"github.com/carbongate/carbongate/gateway/hold"
	"github.com/carbongate/carbongate/gateway/kserve"
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

	signer *hold.Signer

	ctl    *controller.Controller
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (c *Controller) flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.Enabled, "controller", c.Enabled, "run the controller (Kubernetes API through --kubeconfig or in-cluster): release held Jobs and Pods and create scheduled VmTemplates' provider objects at their time; with --admission, hold the Jobs and bare Pods that opt in")
	fs.StringVar(&c.Namespace, "controller-namespace", cmp.Or(os.Getenv("POD_NAMESPACE"), "default"), "namespace of the controller's leader-election Lease")
	fs.DurationVar(&c.LeaseDuration, "leader-lease-duration", controller.DefaultLeaseDuration, "how long a replica waits for a silent leader before taking over")
	fs.DurationVar(&c.RenewDeadline, "leader-renew-deadline", controller.DefaultRenewDeadline, "how long the leader tries to renew its Lease before it stops acting")
	fs.DurationVar(&c.RetryPeriod, "leader-retry-period", controller.DefaultRetryPeriod, "how often replicas try to acquire or renew the Lease")
	fs.Float64Var(&c.QPS, "kube-qps", controller.DefaultQPS, "the controller's Kubernetes API requests per second at most (releases are requests)")
	fs.IntVar(&c.Burst, "kube-burst", controller.DefaultBurst, "Kubernetes API requests allowed above --kube-qps in a burst")
	fs.StringVar(&c.ClusterProvider, "cluster-provider", c.ClusterProvider, "cloud provider (aws, gcp, azure, oracle) whose region names the nodes' "+`topology.kubernetes.io/region labels carry; default: the first provider with the name`)
	fs.StringVar(&c.ClusterRegion, "cluster-region", c.ClusterRegion, "the cluster's region, the only candidate when no node carries a region label (time-shifting only)")
	fs.DurationVar(&c.HoldDuration, "hold-duration", admission.DefaultWorkloadDuration, "run time of a held workload that states none (annotation carbongate.io/duration or activeDeadlineSeconds)")
	fs.StringVar(&c.DecisionKey, "decision-key-file", c.DecisionKey, fmt.Sprintf("file holding the secret (at least %d bytes) the webhook signs held workloads' decisions with and the controller verifies them with; every replica needs the same. Default: a random key per process, so a restart or another replica releases the workloads held before at once, uncredited", hold.MinKeyBytes))
	if c.VMKinds == "" {
		c.VMKinds = controller.DefaultVMKinds().String()
	}
	fs.StringVar(&c.VMKinds, "vm-kinds", c.VMKinds, "the only kinds each provider's VmTemplate template (ConfigMap carbongate-vm-<provider>) may render, as provider=group/Kind,…; grant the controller create and get on exactly these")
	fs.StringVar(&c.HoldMode, "hold-mode", hold.ModeEnforce, "how the webhook treats opted-in Jobs and Pods of namespaces without the label "+hold.NamespaceModeLabel+": enforce (hold them) or shadow (decide and annotate them, marked "+hold.AnnotationShadow+", but let them run as submitted)")
	fs.DurationVar(&c.HoldMaxDelay, "hold-max-delay", admission.DefaultMaxDelay, "longest wait of a held workload without a deadline, unless its namespace's carbongate.io/max-delay says otherwise")
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
	case c.HoldMode != hold.ModeEnforce && c.HoldMode != hold.ModeShadow:
		return fmt.Errorf("--hold-mode must be %s or %s, got %q", hold.ModeEnforce, hold.ModeShadow, c.HoldMode)
	}
	return nil
}

// open builds the controller (it starts in start).
func (c *Controller) open(m *Main, clk clock.Clock, reg prometheus.Registerer) error {
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
	c.ctl, err = controller.New(controller.Config{
		REST: cfg, Clock: clk, LeaseNamespace: c.Namespace,
		LeaseDuration: c.LeaseDuration, RenewDeadline: c.RenewDeadline, RetryPeriod: c.RetryPeriod,
		QPS: float32(c.QPS), Burst: c.Burst,
		Registerer: reg, Logger: m.Logger, Signer: c.signer, VMKinds: kinds,
	})
	return err
}

// loadSigner reads --decision-key-file (surrounding whitespace is not
// part of the key), or makes a random key for this process.
func (c *Controller) loadSigner(m *Main) (*hold.Signer, error) {
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
func (c *Controller) workloads(clk clock.Clock) admission.Workloads {
	if c.ctl == nil {
		return admission.Workloads{}
	}
	return admission.Workloads{Cluster: c.ctl.Cluster(), Provider: c.ClusterProvider, Region: c.ClusterRegion,
		Duration: c.HoldDuration, MaxDelay: c.HoldMaxDelay, Now: clk.Now, Signer: c.signer,
		Shadow: c.HoldMode == hold.ModeShadow}
}

// start runs the controller until close; a failure is reported on done.
func (c *Controller) start(m *Main) {
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
func (c *Controller) close() {
	if c.cancel != nil {
		c.cancel()
		c.wg.Wait()
	}
}
