package main

import (
	"cmp"
	"flag"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/carbongate/carbongate/gateway/admission"
	"github.com/carbongate/carbongate/gateway/casdk"
	"github.com/carbongate/carbongate/gateway/controller"
	"github.com/carbongate/carbongate/gateway/hold"
	"github.com/carbongate/carbongate/gateway/ingest"
	"github.com/carbongate/carbongate/gateway/ingest/electricitymaps"
	"github.com/carbongate/carbongate/gateway/ingest/watttime"
	"github.com/carbongate/carbongate/gateway/kserve"
	"github.com/carbongate/carbongate/gateway/route"
	"github.com/carbongate/carbongate/gateway/runtime"
	"github.com/carbongate/carbongate/gateway/vendorfc"
	"github.com/carbongate/carbongate/gateway/wiring"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/watch"
)

// The flags of each part of runtime.Params.

func admissionFlags(fs *flag.FlagSet, a *runtime.Admission) {
	if a.Timeout == 0 {
		a.Timeout = admission.DefaultTimeout
	}
	if a.MaxBody == 0 {
		a.MaxBody = admission.DefaultMaxBody
	}
	fs.BoolVar(&a.Enabled, "admission", a.Enabled, "serve the VmTemplate mutating admission webhook at POST "+admission.Path)
	fs.BoolVar(&a.FailOpen, "admission-fail-open", a.FailOpen, "when scheduling is unavailable, admit VmTemplates unscheduled (annotated carbongate.io/unscheduled) instead of denying them (503)")
	fs.DurationVar(&a.Timeout, "admission-timeout", a.Timeout, "bound of the webhook's scheduling call; keep it under the webhook's timeoutSeconds")
	fs.StringVar(&a.TLSCert, "tls-cert", a.TLSCert, "PEM certificate (chain) to serve HTTPS with; needs --tls-key")
	fs.StringVar(&a.TLSKey, "tls-key", a.TLSKey, "PEM private key of --tls-cert")
	fs.StringVar(&a.ClientCA, "admission-client-ca", a.ClientCA, "PEM CA bundle: the webhook route requires a client certificate signed by it (the API server's); needs --admission and --tls-cert")
	fs.StringVar(&a.KarmadaKubeconfig, "karmada-kubeconfig", a.KarmadaKubeconfig, "kubeconfig file of a Karmada API server: the webhook then places its ResourceBindings (work.karmada.io) in the member cluster of the decided grid zone; with --controller it also holds them (spec.suspension) and the controller releases them at the decided start; needs --admission (decisions signed with --decision-key-file)")
	fs.Var((*byteSize)(&a.MaxBody), "max-body", "largest AdmissionReview the webhook reads, in bytes or as a quantity like 3Mi")
}

func casdkFlags(fs *flag.FlagSet, a *runtime.CASDK) {
	fs.StringVar(&a.Prefix, "casdk-prefix", casdk.DefaultPrefix, "path prefix of the Carbon Aware SDK Web API; empty: not under a prefix (off unless --casdk-root)")
	fs.BoolVar(&a.Root, "casdk-root", false, "also serve the Carbon Aware SDK Web API at the root (/emissions/…, /locations), for clients whose base URL has no path")
}

func controllerFlags(fs *flag.FlagSet, c *runtime.Controller) {
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
	fs.BoolVar(&c.Redecide, "redecide", true, "re-ask the gateway once per forecast hour while a Job or Pod is held, and move its start (same zone, never past its release-by) when a newer forecast finds a better one")
	fs.Float64Var(&c.RedecideGain, "redecide-gain", controller.DefaultRedecideGain, "least share of the held start's forecast emissions a new start must save to move a hold (0 < gain < 1)")
	fs.DurationVar(&c.ScheduleAhead, "karmada-schedule-ahead", controller.DefaultScheduleAhead, "with --karmada-kubeconfig: how long before its release a held ResourceBinding is handed to Karmada's scheduler with its dispatch still held (spec.suspension.dispatching), so that bindings released together reach their members at once instead of one by one behind Karmada's scheduler; 0: scheduled at the release")
	fs.DurationVar(&c.HoldMaxDelay, "hold-max-delay", admission.DefaultMaxDelay, "longest wait of a held workload without a deadline, unless its namespace's carbongate.io/max-delay says otherwise")
}

func discoveryFlags(fs *flag.FlagSet, d *runtime.Discovery) {
	fs.StringVar(&d.Namespace, "kserve-namespace", d.Namespace, "discover carbongate's KServe InferenceServices (label carbongate.io/zone) in this namespace; exclusive with --routes")
	fs.StringVar(&d.Kubeconfig, "kubeconfig", d.Kubeconfig, "kubeconfig file for --kserve-namespace and --controller; default: the in-cluster service account")
	fs.StringVar(&d.Protocol, "kserve-protocol", route.ProtocolREST, "protocol to call discovered models with: rest or grpc")
	fs.StringVar(&d.Signal, "kserve-signal", d.Signal, "only discover InferenceServices labelled carbongate.io/signal=<signal> (direct or lifecycle)")
	fs.IntVar(&d.GRPCPort, "kserve-grpc-port", int(kserve.GRPCPort), "gRPC port of the predictor when KServe publishes no gRPC URL")
}

func ingestFlags(fs *flag.FlagSet, in *runtime.Ingest) {
	em, wt := &in.ElectricityMaps, &in.WattTime
	fs.StringVar(&em.Zones, "ingest-zones", em.Zones, "zones whose observed intensity is polled from Electricity Maps into --store, e.g. DE,SE")
	fs.StringVar(&em.Signals, "ingest-signals", "lifecycle", "signals polled from Electricity Maps: lifecycle and/or direct")
	fs.DurationVar(&in.Interval, "ingest-interval", ingest.DefaultInterval, "pause between two polling rounds")
	fs.DurationVar(&in.Backfill, "ingest-backfill", ingest.DefaultBackfill, "how far back a feed starts when the store holds nothing for it")
	fs.StringVar(&em.Token, "electricitymaps-token", envOr("ELECTRICITYMAPS_TOKEN", ""), "Electricity Maps API token (default $ELECTRICITYMAPS_TOKEN)")
	fs.StringVar(&em.URL, "electricitymaps-url", electricitymaps.DefaultBaseURL, "Electricity Maps API base URL")
	fs.StringVar(&wt.User, "watttime-user", envOr("WATTTIME_USERNAME", ""), "WattTime user name (default $WATTTIME_USERNAME; the password is read from $WATTTIME_PASSWORD)")
	fs.StringVar(&wt.Regions, "watttime-regions", wt.Regions, "zones whose marginal signal is polled from WattTime, as ZONE=REGION pairs, e.g. US-CAL-CISO=CAISO_NORTH")
	fs.StringVar(&wt.URL, "watttime-url", watttime.DefaultBaseURL, "WattTime API base URL")
	wt.Password = envOr("WATTTIME_PASSWORD", "")
}

func registryFlags(fs *flag.FlagSet, r *runtime.Registry) {
	fs.StringVar(&r.URI, "registry", r.URI, "model registry: postgres://… (MLflow's tables), crate://… or a file path (embedded); serves MLflow's registry API and the champion versions")
	fs.StringVar(&r.Token, "registry-token", "", "bearer token required for registry writes; empty: writes are open")
	fs.StringVar(&r.Alias, "registry-alias", registry.ChampionAlias, "the alias whose versions serve")
	fs.DurationVar(&r.Poll, "registry-poll", watch.DefaultInterval, "how often the alias table is read when the database cannot notify")
	fs.StringVar(&r.CacheDir, "registry-cache-dir", "", "where fetched model versions are kept (default: a directory under the user cache dir)")
	fs.StringVar(&r.Artifacts, "artifacts-destination", "", "what mlflow-artifacts:/ locations map to (the MLflow server's --artifacts-destination), e.g. s3://bucket/mlartifacts; versions are fetched from under it")
	r.Fetch.Flags(fs)
}

func storeFlags(fs *flag.FlagSet, s *runtime.Store, pos *wiring.VendorPosition) {
	fs.StringVar(&s.URI, "store", s.URI, "observed-signals store, postgres://… or crate://…: model history is read from it (production mode) and the pollers write into it; absent: the bundled data")
	fs.BoolVar(&s.Migrate, "store-migrate", s.Migrate, "create the store's tables when absent, at startup")
	ingestFlags(fs, &s.Ingest)
	vendorFlags(fs, &s.Vendor, pos)
}

func vendorFlags(fs *flag.FlagSet, v *runtime.Vendor, pos *wiring.VendorPosition) {
	fs.StringVar(&v.Name, "vendor-forecast", v.Name, "a vendor's own forecast as a step of the fallback chain (source vendor): electricitymaps (lifecycle and direct; needs its token) or watttime (the marginal signal of the --watttime-regions zones; needs its credentials); absent: none")
	fs.StringVar((*string)(pos), "vendor-position", string(wiring.VendorAfterGeneric), "where the vendor step goes in the chain: first, after-zone (after the zone models), after-generic (before the baseline) or last (after climatology)")
	fs.IntVar(&v.Horizon, "vendor-horizon", v.Horizon, "hours of forecast asked of the vendor (Electricity Maps 6 to 72, WattTime 1 to 72); 0: the vendor's default (24); hours past it repeat the vendor's last day")
	fs.DurationVar(&v.MaxAge, "vendor-max-age", vendorfc.DefaultMaxAge, "how long a vendor forecast is used before the vendor is asked again")
	fs.DurationVar(&v.Timeout, "vendor-timeout", vendorfc.DefaultTimeout, "bound of one call to the vendor")
	fs.Float64Var(&v.Rate, "vendor-rate", vendorfc.DefaultRate, "calls to the vendor a second at most, in bursts of --vendor-burst; beyond it the step fails at once and the chain moves on (the forecast is retried within a minute)")
	fs.IntVar(&v.Burst, "vendor-burst", vendorfc.DefaultBurst, "calls to the vendor at once at most (the warm-up at start asks for every zone with data)")
	fs.StringVar(&v.Store, "vendor-store-zones", v.Store, "zones whose vendor forecasts are stored in --store as model vendor:<vendor>, for carbonctl evaluate --store, e.g. DE,FR")
	fs.DurationVar(&v.Interval, "vendor-store-interval", vendorfc.DefaultStoreInterval, "pause between two rounds of storing vendor forecasts")
}

// envOr returns the environment variable's value, or def when unset.
func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

// byteSize is a flag of bytes written as a number or a Kubernetes quantity.
type byteSize int64

func (b *byteSize) String() string {
	return resource.NewQuantity(int64(*b), resource.BinarySI).String()
}

func (b *byteSize) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return fmt.Errorf("%q is not a size like 3145728 or 3Mi", s)
	}
	v, ok := q.AsInt64()
	if !ok || v <= 0 {
		return fmt.Errorf("%q must be a positive whole number of bytes", s)
	}
	*b = byteSize(v)
	return nil
}
