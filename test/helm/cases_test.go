//go:build interop

package helm

// chartCase is one values combination the chart must render, lint and pass
// every check with.
type chartCase struct {
	name    string
	release string
	ns      string
	values  string         // YAML given with --values
	kinds   map[string]int // how many objects of each kind (CRDs aside)
	// externalConfigMaps are ConfigMaps the values name but the chart does
	// not render.
	externalConfigMaps []string
	// apiServer: a release for Karmada's API server (karmada.side
	// apiServer), which renders karmada-apiserver.yaml alone.
	apiServer bool
}

// testCA is a base64 placeholder for admission.tls.caBundle: the chart
// passes it through; the API server only needs it to be PEM.
const testCA = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJ0ZXN0Ci0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K"

// chartCases: the defaults, everything on, each admission mode and bundle
// source, the registry on PostgreSQL, discovery, KServe models variants.
var chartCases = []chartCase{
	{
		name: "defaults", release: "carbongate", ns: "carbon", values: "{}",
		kinds: map[string]int{"ServiceAccount": 1, "Service": 1, "Deployment": 1, "PodDisruptionBudget": 1},
	},
	{
		name: "everything on", release: "cg", ns: "carbon",
		values: `
registry:
  enabled: true
  uriSecret: {name: carbongate-registry}
  tokenSecret: {name: carbongate-registry-token}
  artifactsDestination: s3://carbongate-models/mlartifacts
  artifactSources: [s3://carbongate-models/registry, s3://carbongate-models/models]
s3:
  enabled: true
  endpoint: http://seaweedfs-s3.storage.svc:8333
  region: us-east-1
  verifyTLS: false
  credentialsSecret: {name: carbongate-s3}
kserve:
  namespace: models
  discovery: {enabled: true, protocol: grpc, signal: lifecycle}
  models: {enabled: true}
admission:
  mode: opa
  failOpen: true
  tls: {secretName: carbongate-opa-tls, caBundle: ` + testCA + `}
  namespaceSelector: {matchLabels: {carbongate.io/admission: enabled}}
autoscaling: {enabled: true}
serviceMonitor: {enabled: true, labels: {release: prometheus}}
prometheusRule: {enabled: true, labels: {release: prometheus}, runbookBase: "https://wiki.example.com/carbongate/runbooks"}
grafana: {dashboard: {enabled: true, folder: Carbon}}
store: {enabled: true, uriSecret: {name: carbongate-store}, migrate: true}
ingest:
  electricityMaps: {zones: [DE, SE], tokenSecret: {name: electricitymaps}}
backfill: {enabled: true, zones: [DE], args: [--batch=32]}
gateway:
  clock: system
  maxConns: 2048
  extraEnv: [{name: GOMAXPROCS, value: "2"}]
`,
		kinds: map[string]int{"ServiceAccount": 1, "Service": 2, "Deployment": 2, "PodDisruptionBudget": 2,
			"HorizontalPodAutoscaler": 1, "Role": 1, "RoleBinding": 1, "ConfigMap": 3, "MutatingWebhookConfiguration": 1,
			"ServingRuntime": 1, "InferenceService": 4, "ServiceMonitor": 1, "PrometheusRule": 1, "CronJob": 1},
	},
	{
		name: "admission opa, bundle from a ConfigMap", release: "carbongate", ns: "policy",
		values: `
admission:
  mode: opa
  tls: {secretName: opa-tls, injectCAFrom: policy/opa-cert}
  opa: {replicas: 1, bundle: {source: configMap, configMap: carbongate-opa-bundle}}
`,
		kinds: map[string]int{"ServiceAccount": 1, "Service": 2, "Deployment": 2, "PodDisruptionBudget": 1,
			"ConfigMap": 1, "MutatingWebhookConfiguration": 1},
		externalConfigMaps: []string{"carbongate-opa-bundle"},
	},
	{
		name: "admission opa, bundle server", release: "carbongate", ns: "policy",
		values: `
admission:
  mode: opa
  failurePolicy: Ignore
  tls: {secretName: opa-tls, caBundle: ` + testCA + `}
  clientCA: {secretName: apiserver-client-ca, key: cas.pem}
  opa: {bundle: {source: url, url: "https://bundles.example.com", resource: carbongate/bundle.tar.gz}}
`,
		kinds: map[string]int{"ServiceAccount": 1, "Service": 2, "Deployment": 2, "PodDisruptionBudget": 2,
			"ConfigMap": 1, "MutatingWebhookConfiguration": 1},
	},
	{
		name: "admission carbongate", release: "gate", ns: "carbon",
		values: `
admission:
  mode: carbongate
  failOpen: true
  timeoutSeconds: 8
  tls: {secretName: carbongate-webhook-tls, caBundle: ` + testCA + `}
  clientCA: {secretName: apiserver-client-ca}
serviceMonitor: {enabled: true}
`,
		kinds: map[string]int{"ServiceAccount": 1, "Service": 1, "Deployment": 1, "PodDisruptionBudget": 1,
			"MutatingWebhookConfiguration": 1, "ServiceMonitor": 1},
	},
	{
		name: "admission none", release: "carbongate", ns: "carbon", values: "admission: {mode: none}",
		kinds: map[string]int{"ServiceAccount": 1, "Service": 1, "Deployment": 1, "PodDisruptionBudget": 1},
	},
	{
		name: "alerts and dashboard", release: "carbongate", ns: "carbon",
		values: "{prometheusRule: {enabled: true}, grafana: {dashboard: {enabled: true}}}",
		kinds: map[string]int{"ServiceAccount": 1, "Service": 1, "Deployment": 1, "PodDisruptionBudget": 1,
			"PrometheusRule": 1, "ConfigMap": 1},
	},
	{
		name: "registry on PostgreSQL", release: "carbongate", ns: "carbon",
		values: `
registry:
  enabled: true
  uriSecret: {name: pg-registry, key: postgres-uri}
  tokenSecret: {name: registry-token}
  poll: 2s
s3: {enabled: true, endpoint: "seaweedfs:8333", credentialsSecret: {name: s3-keys}}
gateway: {replicas: 3}
podDisruptionBudget: {maxUnavailable: null, minAvailable: 2}
`,
		kinds: map[string]int{"ServiceAccount": 1, "Service": 1, "Deployment": 1, "PodDisruptionBudget": 1},
	},
	{
		name: "registry with models on AWS S3 through IRSA", release: "carbongate", ns: "carbon",
		values: `
registry: {enabled: true, uriSecret: {name: pg-registry}, artifactsDestination: s3://carbongate-models/mlartifacts}
s3: {enabled: true, region: eu-west-1}
serviceAccount: {annotations: {eks.amazonaws.com/role-arn: "arn:aws:iam::123456789012:role/carbongate"}}
`,
		kinds: map[string]int{"ServiceAccount": 1, "Service": 1, "Deployment": 1, "PodDisruptionBudget": 1},
	},
	{
		name: "discovery on", release: "carbongate", ns: "carbon",
		values: `
kserve: {namespace: kserve-models, discovery: {enabled: true}}
serviceAccount: {name: gateway}
`,
		kinds: map[string]int{"ServiceAccount": 1, "Service": 1, "Deployment": 1, "PodDisruptionBudget": 1, "Role": 1, "RoleBinding": 1},
	},
	{
		name: "production mode: store and both ingest sources", release: "carbongate", ns: "carbon",
		values: `
gateway: {clock: system, maxConns: 8192}
store: {enabled: true, uriSecret: {name: pg-store, key: url}}
ingest:
  electricityMaps:
    zones: [DE, se, US-CAL-CISO]
    signals: [lifecycle, direct]
    tokenSecret: {name: electricitymaps, key: api-token}
    url: http://electricitymaps-mock.carbon.svc:8080
  wattTime:
    regions: {US-CAL-CISO: CAISO_NORTH, US-NY-NYIS: NYISO}
    credentialsSecret: {name: watttime, usernameKey: user, passwordKey: pass}
    url: https://watttime-proxy.example.com
  interval: 5m
  backfill: 72h
`,
		kinds: map[string]int{"ServiceAccount": 1, "Service": 1, "Deployment": 1, "PodDisruptionBudget": 1},
	},
	{
		name: "production mode: WattTime only, store migrated", release: "carbongate", ns: "carbon",
		values: `
store: {enabled: true, uriSecret: {name: crate-store}, migrate: true}
ingest: {wattTime: {regions: {US-CAL-CISO: CAISO_NORTH}, credentialsSecret: {name: watttime}}}
`,
		kinds: map[string]int{"ServiceAccount": 1, "Service": 1, "Deployment": 1, "PodDisruptionBudget": 1},
	},
	{
		name: "just CrateDB: registry, store and model files in one CrateDB", release: "carbongate", ns: "carbon",
		values: `
gateway: {clock: system}
registry: {enabled: true, uriSecret: {name: crate-registry}, poll: 1s, artifactSources: [crate+blob://crate.db.svc:4200/models]}
store: {enabled: true, uriSecret: {name: crate-store}}
`,
		kinds: map[string]int{"ServiceAccount": 1, "Service": 1, "Deployment": 1, "PodDisruptionBudget": 1},
	},
	{
		name: "backfill CronJob", release: "cg", ns: "batch",
		values: `
gateway: {clock: system}
store: {enabled: true, uriSecret: {name: pg-store}}
registry: {enabled: true, uriSecret: {name: pg-registry}, artifactsDestination: s3://carbongate-models/mlartifacts, artifactSources: [s3://carbongate-models/registry]}
s3: {enabled: true, endpoint: http://seaweedfs-s3.storage.svc:8333, credentialsSecret: {name: s3-keys}}
backfill:
  enabled: true
  schedule: "0 3 * * *"
  timeZone: Europe/Berlin
  zones: [DE, SE, US-CAL-CISO]
  from: now-48h
  to: now-24h
  every: 6h
  horizon: 72h
  model: models:/carbon-forecaster-{zone}@challenger
  signal: direct
  workers: 4
  args: [--batch=16, --call-timeout=1m]
`,
		kinds: map[string]int{"ServiceAccount": 1, "Service": 1, "Deployment": 1, "PodDisruptionBudget": 1, "CronJob": 1},
	},
	{
		name: "Karmada, host side", release: "cg", ns: "carbon", values: karmadaValues,
		kinds: map[string]int{"ServiceAccount": 1, "Service": 1, "Deployment": 1, "PodDisruptionBudget": 1,
			"MutatingWebhookConfiguration": 1, "Secret": 1},
	},
	{
		name: "Karmada, API server side", release: "cg", ns: "karmada-system", apiServer: true,
		values: karmadaValues + "  side: apiServer\n  hostNamespace: carbon\n",
		kinds:  map[string]int{"MutatingWebhookConfiguration": 1, "ClusterRole": 1, "ClusterRoleBinding": 1, "ServiceAccount": 1, "Secret": 1},
	},
	{
		name: "Karmada, API server side: tokens made by hand", release: "cg", ns: "karmada-system", apiServer: true,
		values: karmadaValues + "  side: apiServer\n  rbac: {serviceAccount: {tokenSecret: false}}\n",
		kinds:  map[string]int{"MutatingWebhookConfiguration": 1, "ClusterRole": 1, "ClusterRoleBinding": 1, "ServiceAccount": 1},
	},
	{
		name: "Karmada, API server side: Ignore, own URL, CA and subjects", release: "carbongate", ns: "karmada-system", apiServer: true,
		values: `
admission: {mode: carbongate, tls: {secretName: carbongate-webhook-tls}}
karmada:
  enabled: true
  side: apiServer
  webhook:
    url: https://carbongate.example.com:8443/v1/admission/mutate
    caBundle: ` + testCA + `
    failurePolicy: Ignore
    namespaceSelector: {matchLabels: {carbongate.io/schedule: enabled}}
  rbac:
    serviceAccount: {create: false, name: carbongate}
    subjects: [{kind: User, name: carbongate}, {kind: ServiceAccount, name: gate, namespace: tools}]
    workloadKinds: [{apiGroup: batch, resources: [jobs, cronjobs]}, {apiGroup: "", resources: [pods]}]
`,
		kinds: map[string]int{"MutatingWebhookConfiguration": 1, "ClusterRole": 1, "ClusterRoleBinding": 1},
	},
	{
		name: "KServe models, Knative", release: "carbongate", ns: "carbon",
		values: `
kserve:
  models:
    enabled: true
    zones: [us-cal-ciso, FR]
    generic: false
    storageUri: gs://bucket/models/
    signal: direct
    namePrefix: cf
    deploymentMode: Knative
    minReplicas: 0
    maxReplicas: 3
    runtime: {name: carbonserve-direct, image: "registry.example.com/carbonserve:v9"}
    resources: {requests: {cpu: 200m, memory: null}, limits: {cpu: null, memory: 2Gi}}
serviceAccount: {create: false}
podDisruptionBudget: {enabled: false}
`,
		kinds: map[string]int{"Service": 1, "Deployment": 1, "ServingRuntime": 1, "InferenceService": 2},
	},
}

// karmadaValues run carbongate with Karmada (host side): its own webhook,
// the Karmada API server's kubeconfig from a Secret.
const karmadaValues = `
admission:
  mode: carbongate
  tls: {secretName: carbongate-webhook-tls, caBundle: ` + testCA + `}
  clientCA: {secretName: apiserver-client-cas}
karmada:
  enabled: true
  kubeconfigSecret: {name: karmada-kubeconfig, key: config}
  scheduleAhead: 45s
`

// rejectCase is a values combination the chart must refuse, with a part of
// the message it must give.
type rejectCase struct {
	name, values, want string
}

// storeBase enables the store; backfillBase the store and the registry.
const (
	storeBase    = "store: {enabled: true, uriSecret: {name: store}}\n"
	backfillBase = storeBase + "registry: {enabled: true, uriSecret: {name: registry}}\n"
)

var rejectCases = []rejectCase{
	{"misspelled key", "gateway: {replica: 3}", "replica"},
	{"unknown admission mode", "admission: {mode: kyverno}", "/admission/mode"},
	{"unknown hold mode", "controller: {enabled: true, holdMode: dry-run}", "/controller/holdMode"},
	{"Karmada schedule-ahead not a duration", "karmada: {scheduleAhead: soon}", "/karmada/scheduleAhead"},
	{"grace period not above drain + shutdown", "gateway: {drainDelaySeconds: 20, shutdownTimeoutSeconds: 10, terminationGracePeriodSeconds: 30}",
		"terminationGracePeriodSeconds (30) must exceed"},
	{"registry without its Secret", "registry: {enabled: true}", "registry.uriSecret.name"},
	{"webhook without TLS", "admission: {mode: carbongate}", "admission.tls.secretName"},
	{"webhook timeout above the API server's limit", "admission: {mode: opa, timeoutSeconds: 31, tls: {secretName: t}}", "timeoutSeconds"},
	{"webhook timeout not above carbongate's", "admission: {mode: opa, timeoutSeconds: 2, tls: {secretName: t}}", "must exceed admission.carbongateTimeoutSeconds"},
	{"ConfigMap bundle without a name", "admission: {mode: opa, tls: {secretName: t}, opa: {bundle: {source: configMap}}}", "admission.opa.bundle.configMap"},
	{"two PDB bounds", "podDisruptionBudget: {maxUnavailable: 1, minAvailable: 1}", "exactly one"},
	{"zone listed twice", "kserve: {models: {enabled: true, zones: [DE, de]}}", "listed twice"},
	{"reserved zone", "kserve: {models: {enabled: true, zones: [generic]}}", "reserved"},
	{"bad storage URI", "kserve: {models: {enabled: true, storageUri: http://x}}", "storageUri"},
	{"env entry with both value and valueFrom", "gateway: {extraEnv: [{name: X, value: v, valueFrom: {secretKeyRef: {name: s, key: k}}}]}", "extraEnv"},
	{"backfill without the store", "backfill: {enabled: true, zones: [DE]}", "backfill.enabled needs store.enabled"},
	{"backfill without the registry", "store: {enabled: true, uriSecret: {name: s}}\nbackfill: {enabled: true, zones: [DE]}",
		"backfill.enabled needs registry.enabled"},
	{"backfill without zones", backfillBase + "backfill: {enabled: true}", "backfill.enabled needs backfill.zones"},
	{"backfill store URL in args", backfillBase + "backfill: {enabled: true, zones: [DE], args: [--store=postgres://u:p@db/x]}",
		"backfill.args: --store is set from its Secret"},
	{"backfill registry URI in args", backfillBase + "backfill: {enabled: true, zones: [DE], args: [-registry, postgres://db/x]}",
		"backfill.args: --registry is set from its Secret"},
	{"backfill from not a carbonctl time", backfillBase + "backfill: {enabled: true, zones: [DE], from: yesterday}", "/backfill/from"},
	{"backfill every not whole hours", backfillBase + "backfill: {enabled: true, zones: [DE], every: 90m}", "/backfill/every"},
	{"backfill zero workers", backfillBase + "backfill: {enabled: true, zones: [DE], workers: 0}", "/backfill/workers"},
	{"store without its Secret", "store: {enabled: true}", "store.uriSecret.name"},
	{"Electricity Maps ingest without the store", "ingest: {electricityMaps: {zones: [DE], tokenSecret: {name: t}}}",
		"ingest.electricityMaps.zones and ingest.wattTime.regions need store.enabled"},
	{"WattTime ingest without the store", "ingest: {wattTime: {regions: {DE: x}, credentialsSecret: {name: w}}}",
		"ingest.electricityMaps.zones and ingest.wattTime.regions need store.enabled"},
	{"Electricity Maps zones without a token", storeBase + "ingest: {electricityMaps: {zones: [DE]}}",
		"ingest.electricityMaps.tokenSecret.name"},
	{"WattTime regions without credentials", storeBase + "ingest: {wattTime: {regions: {US-CAL-CISO: CAISO_NORTH}}}",
		"ingest.wattTime.credentialsSecret.name"},
	{"ingest of the marginal signal from Electricity Maps", storeBase + "ingest: {electricityMaps: {zones: [DE], signals: [marginal], tokenSecret: {name: t}}}",
		"/ingest/electricityMaps/signals"},
	{"ingest without signals", storeBase + "ingest: {electricityMaps: {zones: [DE], signals: [], tokenSecret: {name: t}}}",
		"/ingest/electricityMaps/signals"},
	{"WattTime region of a bad zone id", storeBase + "ingest: {wattTime: {regions: {\"US CAL\": CAISO}, credentialsSecret: {name: w}}}",
		"invalid propertyName 'US CAL'"},
	{"Electricity Maps zone listed twice", storeBase + "ingest: {electricityMaps: {zones: [DE, de], tokenSecret: {name: t}}}",
		"ingest.electricityMaps.zones: zone DE is listed twice"},
	{"WattTime zone listed twice", storeBase + "ingest: {wattTime: {regions: {US-CAL-CISO: A, us-cal-ciso: B}, credentialsSecret: {name: w}}}",
		"ingest.wattTime.regions: zone US-CAL-CISO is listed twice"},
	{"backfill zone listed twice", backfillBase + "backfill: {enabled: true, zones: [SE, se]}", "backfill.zones: zone SE is listed twice"},
	{"ingest interval not a duration", storeBase + "ingest: {interval: often}", "/ingest/interval"},
	{"negative connection limit", "gateway: {maxConns: -1}", "/gateway/maxConns"},
	{"unknown vendor", "vendorForecast: {vendor: tomorrow}", "/vendorForecast/vendor"},
	{"Electricity Maps forecast without a token", "vendorForecast: {vendor: electricitymaps}", "ingest.electricityMaps.tokenSecret.name"},
	{"WattTime forecast without regions", "vendorForecast: {vendor: watttime}", "vendorForecast.vendor watttime needs ingest.wattTime.regions"},
	{"vendor forecasts stored without the store", "ingest: {electricityMaps: {tokenSecret: {name: t}}}\nvendorForecast: {vendor: electricitymaps, storeZones: [DE]}",
		"vendorForecast.storeZones needs vendorForecast.vendor and store.enabled"},
	{"Karmada without carbongate's webhook", "karmada: {enabled: true, kubeconfigSecret: {name: k}}", "karmada.enabled needs admission.mode carbongate"},
	{"Karmada without its kubeconfig", "admission: {mode: carbongate, tls: {secretName: t}}\nkarmada: {enabled: true}", "karmada.kubeconfigSecret.name"},
	{"Karmada API server side not enabled", "karmada: {side: apiServer}", "karmada.side apiServer needs karmada.enabled"},
	{"Karmada API server side bound to no one", "admission: {mode: carbongate, tls: {secretName: t}}\nkarmada: {enabled: true, side: apiServer, rbac: {serviceAccount: {create: false}}}",
		"bound to no one"},
	{"Karmada unknown side", "karmada: {side: member}", "/karmada/side"},
	{"Karmada unknown failure policy", "karmada: {webhook: {failurePolicy: Retry}}", "/karmada/webhook/failurePolicy"},
	{"Karmada plain-HTTP webhook URL", "karmada: {webhook: {url: http://carbongate:8080/v1/admission/mutate}}", "/karmada/webhook/url"},
	{"Karmada workload kind in the RBAC group", "karmada: {rbac: {workloadKinds: [{apiGroup: rbac.authorization.k8s.io, resources: [clusterroles]}]}}",
		"/karmada/rbac/workloadKinds/0"},
	{"HPA bounds reversed", "autoscaling: {enabled: true, minReplicas: 5, maxReplicas: 2}", "minReplicas"},
}
