// Package controller acts on carbongate's decisions in a Kubernetes
// cluster: it releases the batch/v1 Jobs and Pods the admission webhook
// holds (package hold) at their decided start — or at the deadline guard,
// deadline − duration, whichever comes first — and turns each scheduled
// VmTemplate into the provider's object (an Azure Service Operator
// VirtualMachine, an ACK EC2 Instance, …) from a template the user gives
// per provider, tracking its readiness in the VmTemplate's status. With
// observed intensity (Config.Observed) it also keeps the ledger
// (ledger.go): once a released Job or Pod has run and the hours of its run
// and of running it at admission are observed, it records the realized
// saving on it (package models/ledger computes it), emits an Event and
// counts it.
//
// It runs on controller-runtime with leader election on a Lease, so
// several replicas are safe: only the leader releases. All state is in the
// objects (labels, annotations, status), so a restarted or new leader
// resumes exactly; a release is a patch conditioned on the object's
// resourceVersion, so nothing is released twice. Timers are the work
// queue's delayed adds — no per-object polling — converted to wall time
// through the gateway's clock (a replay clock may run faster than the
// wall, see clock.Replay.WithSpeed). Every replica also serves the
// webhook's view of the cluster (Cluster): node regions and namespace
// opt-ins from the same informer cache.
package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/clock"
	"github.com/carbongate/carbongate/gateway/hold"
	"github.com/carbongate/carbongate/gateway/hold/v1alpha1"
	"github.com/carbongate/carbongate/models/ledger"
)

// Defaults of Config.
const (
	DefaultLeaseName     = "carbongate-controller"
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
	DefaultWorkers       = 8
	// The client's own rate limit of API requests (client-go's default,
	// 5/s, would make a minute's releases of thousands of workloads late).
	DefaultQPS   = 200
	DefaultBurst = 400
	// DefaultScheduleAhead is the flag's default of ScheduleAhead: Karmada's
	// scheduler places about 15 bindings a second on a small control plane,
	// so a minute covers a wave of several hundred released at one second,
	// while the capacity, taints and readiness it schedules by are at most
	// a minute old at the release.
	DefaultScheduleAhead = time.Minute
)

// Config configures a Controller.
type Config struct {
	REST  *rest.Config // required
	Clock clock.Clock  // required: the gateway's clock, in which decisions are written
	// LeaseNamespace holds the leader-election Lease; required.
	LeaseNamespace string
	LeaseName      string        // default DefaultLeaseName
	LeaseDuration  time.Duration // default DefaultLeaseDuration
	RenewDeadline  time.Duration // default DefaultRenewDeadline
	RetryPeriod    time.Duration // default DefaultRetryPeriod
	Workers        int           // concurrent reconciles per kind; default DefaultWorkers
	QPS            float32       // API requests per second at most; default DefaultQPS
	Burst          int           // above QPS in bursts; default DefaultBurst
	Registerer     prometheus.Registerer
	Logger         *slog.Logger // nil: discard
	// VMKinds are the kinds each provider's VmTemplate template may
	// render; nil: DefaultVMKinds.
	VMKinds VMKinds
	// Signer verifies the decisions of held Jobs and Pods (the webhook's,
	// with the same key); required. A workload whose decision does not
	// verify is released at once, reason invalid, and never credited.
	Signer *hold.Signer
	// Observed is the observed intensity the ledger charges released
	// workloads at (the forecast store's observed signals; the bundled
	// dataset under a replay clock, as of the clock's now); nil: no
	// ledger, and released workloads leave the cache.
	Observed ledger.Observations
	// Signal is the signal the webhook decides on; default lifecycle.
	Signal forecast.Signal
	// LedgerRetry and LedgerHorizon: see DefaultLedgerRetry and
	// DefaultLedgerHorizon (their defaults), in the gateway's clock.
	LedgerRetry, LedgerHorizon time.Duration
	// Rescheduler, when set, is the gateway asked where a held workload
	// goes when the place it was decided for cannot take it at its staging
	// or release (moveoff.go) and, with Redecide, re-decides held
	// workloads once per forecast hour until their release (redecide.go);
	// RedecideGain is the share a new start must save to move a hold
	// (default DefaultRedecideGain).
	Rescheduler  Rescheduler
	Redecide     bool
	RedecideGain float64
	// Federation, when set, is a Karmada API server whose held
	// ResourceBindings the controller releases too (binding.go), with the
	// same QPS and Burst.
	Federation *rest.Config
	// ScheduleAhead is how long (wall time) before its release a held
	// binding is handed to Karmada's scheduler with its dispatch still
	// held, so that a wave of releases is not queued behind Karmada's
	// one-at-a-time scheduling; 0: scheduled at the release.
	ScheduleAhead time.Duration
}

// Controller is a started-on-demand controller manager.
type Controller struct {
	cfg     Config
	mgr     manager.Manager
	metrics *metrics
	cluster *clusterView
}

// New builds the manager and its reconcilers; Start runs them.
func New(cfg Config) (*Controller, error) {
	if cfg.REST == nil || cfg.Clock == nil || cfg.LeaseNamespace == "" || cfg.Signer == nil {
		return nil, errors.New("controller: REST, Clock, LeaseNamespace and Signer are required")
	}
	cfg.LeaseName = cmp.Or(cfg.LeaseName, DefaultLeaseName)
	cfg.LeaseDuration = cmp.Or(cfg.LeaseDuration, DefaultLeaseDuration)
	cfg.RenewDeadline = cmp.Or(cfg.RenewDeadline, DefaultRenewDeadline)
	cfg.RetryPeriod = cmp.Or(cfg.RetryPeriod, DefaultRetryPeriod)
	cfg.Workers = cmp.Or(cfg.Workers, DefaultWorkers)
	cfg.Signal = cmp.Or(cfg.Signal, forecast.SignalLifecycle)
	cfg.LedgerRetry = cmp.Or(cfg.LedgerRetry, DefaultLedgerRetry)
	cfg.LedgerHorizon = cmp.Or(cfg.LedgerHorizon, DefaultLedgerHorizon)
	if cfg.VMKinds == nil {
		cfg.VMKinds = DefaultVMKinds()
	}
	cfg.REST = rest.CopyConfig(cfg.REST)
	cfg.REST.QPS, cfg.REST.Burst = cmp.Or(cfg.QPS, DefaultQPS), cmp.Or(cfg.Burst, DefaultBurst)
	if !(cfg.RetryPeriod < cfg.RenewDeadline && cfg.RenewDeadline < cfg.LeaseDuration) {
		return nil, fmt.Errorf("controller: want retry period < renew deadline < lease duration, got %v, %v, %v", cfg.RetryPeriod, cfg.RenewDeadline, cfg.LeaseDuration)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	log := logr.FromSlogHandler(cfg.Logger.Handler())
	ctrl.SetLogger(log)
	klog.SetLogger(log)
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	held, err := watched(cfg.Observed != nil)
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg.REST, ctrl.Options{
		Scheme:                        scheme,
		Logger:                        log,
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		LeaderElection:                true,
		LeaderElectionID:              cfg.LeaseName,
		LeaderElectionNamespace:       cfg.LeaseNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &cfg.LeaseDuration,
		RenewDeadline:                 &cfg.RenewDeadline,
		RetryPeriod:                   &cfg.RetryPeriod,
		Cache: cache.Options{
			// managedFields are half of a small object and never read here.
			DefaultTransform: cache.TransformStripManagedFields(),
			ByObject: map[client.Object]cache.ByObject{
				// Only held (and, for the ledger, released) workloads are
				// cached: not every Pod of the cluster.
				&batchv1.Job{}: {Label: held},
				&corev1.Pod{}:  {Label: held},
				// The webhook's placement reads nodes' labels and taints.
				&corev1.Node{}: {Transform: nodeTransform},
			}},
	})
	if err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	c := &Controller{cfg: cfg, mgr: mgr, metrics: newMetrics(cfg.Registerer)}
	c.cluster = &clusterView{reader: mgr.GetCache(), log: cfg.Logger}
	// The webhook's informers start with the cache, not at the first
	// admission (which would wait for them to sync).
	for _, obj := range []client.Object{&corev1.Node{}, metaOf("Namespace")} {
		if _, err := mgr.GetCache().GetInformer(context.Background(), obj); err != nil {
			return nil, fmt.Errorf("controller: %T informer: %w", obj, err)
		}
	}
	if err := c.setup(); err != nil {
		return nil, err
	}
	if cfg.Federation != nil {
		fed := rest.CopyConfig(cfg.Federation)
		fed.QPS, fed.Burst = cfg.REST.QPS, cfg.REST.Burst
		if err := c.addFederation(fed, scheme, c.deps()); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Start runs the manager until ctx ends: caches on every replica, the
// reconcilers on the leader only. It returns when the manager stops.
func (c *Controller) Start(ctx context.Context) error {
	go func() {
		select {
		case <-c.mgr.Elected():
			c.metrics.leader.Set(1)
			c.cfg.Logger.Info("controller: elected leader", "lease", c.cfg.LeaseNamespace+"/"+c.cfg.LeaseName)
		case <-ctx.Done():
		}
	}()
	return c.mgr.Start(ctx)
}

// Elected is closed when this replica becomes the leader.
func (c *Controller) Elected() <-chan struct{} { return c.mgr.Elected() }

// Cluster is the webhook's view of the cluster, from the cache.
func (c *Controller) Cluster() hold.Cluster { return c.cluster }

// setup registers the reconcilers.
func (c *Controller) setup() error {
	d := c.deps()
	rec := d.events
	for _, r := range []*releaser{jobReleaser(), podReleaser()} {
		r.deps, r.redecider = d, c.redecider()
		if err := ctrl.NewControllerManagedBy(c.mgr).Named("hold-" + r.kind).For(r.newObj()).
			WithOptions(ctrlOptions(c.cfg.Workers)).Complete(r); err != nil {
			return fmt.Errorf("controller: %s: %w", r.kind, err)
		}
	}
	if c.cfg.Observed != nil {
		for _, r := range []*recorder{jobRecorder(), podRecorder()} {
			c.equip(r, d)
			if err := ctrl.NewControllerManagedBy(c.mgr).Named("ledger-"+r.kind).
				For(r.newObj(), builder.WithPredicates(predicate.Funcs{DeleteFunc: r.deleted})).
				WithOptions(ctrlOptions(c.cfg.Workers)).Complete(r); err != nil {
				return fmt.Errorf("controller: ledger %s: %w", r.kind, err)
			}
		}
	}
	v := &vmReconciler{kinds: c.cfg.VMKinds, client: c.mgr.GetClient(), reader: c.mgr.GetAPIReader(), clock: c.cfg.Clock, events: rec, metrics: c.metrics, log: c.cfg.Logger}
	if err := ctrl.NewControllerManagedBy(c.mgr).Named("vmtemplate").For(&v1alpha1.VmTemplate{}).
		WithOptions(ctrlOptions(c.cfg.Workers)).Complete(v); err != nil {
		return fmt.Errorf("controller: vmtemplate: %w", err)
	}
	return nil
}

// equip gives recorder r the means d and the ledger's configuration.
func (c *Controller) equip(r *recorder, d deps) *recorder {
	r.deps = d
	r.obs, r.signal, r.retry, r.horizon = c.cfg.Observed, c.cfg.Signal, c.cfg.LedgerRetry, c.cfg.LedgerHorizon
	return r
}

// deps are the reconcilers' means of acting on the controller's own
// cluster.
func (c *Controller) deps() deps {
	// The core/v1 events recorder: deploy/controller/rbac.yaml grants events
	// in the core group, and the tests read core/v1 Events. controller-runtime
	// 0.23 deprecates it for the events.k8s.io recorder, whose Eventf takes
	// a related object and an action: a move with its RBAC, not done yet.
	//lint:ignore SA1019 see above
	rec := c.mgr.GetEventRecorderFor("carbongate")
	return deps{client: c.mgr.GetClient(), clock: c.cfg.Clock, events: rec, metrics: c.metrics, log: c.cfg.Logger, signer: c.cfg.Signer,
		nodes: c.mgr.GetCache()}
}

// redecider is a releaser's re-decider (hourly with Config.Redecide): nil
// without Config.Rescheduler.
func (c *Controller) redecider() *redecider {
	if c.cfg.Rescheduler == nil {
		return nil
	}
	return &redecider{sched: c.cfg.Rescheduler, hourly: c.cfg.Redecide, gain: cmp.Or(c.cfg.RedecideGain, DefaultRedecideGain),
		timeout: redecideTimeout, asked: map[string]time.Time{}}
}

// watched selects the Jobs and Pods the controller caches: those held, and
// with the ledger those released and those decided in shadow too.
func watched(ledger bool) (labels.Selector, error) {
	req, err := labels.NewRequirement(hold.Label, selection.In, watchedValues(ledger))
	if err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	return labels.NewSelector().Add(*req), nil
}

// watchedValues are the values of hold.Label watched selects.
func watchedValues(ledger bool) []string {
	if ledger {
		return []string{hold.Held, hold.Released, hold.Shadow}
	}
	return []string{hold.Held}
}
