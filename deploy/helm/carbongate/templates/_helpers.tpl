{{/* Names, labels and the checks every render runs. */}}

{{- define "carbongate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: <release>-<chart>, or the release name alone when it already holds the chart name. */}}
{{- define "carbongate.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Name of an auxiliary object: <fullname>-<suffix>, kept within 63 characters. */}}
{{- define "carbongate.child" -}}
{{- $full := include "carbongate.fullname" .root | trunc (int (sub 62 (len .suffix))) | trimSuffix "-" }}
{{- printf "%s-%s" $full .suffix }}
{{- end }}

{{- define "carbongate.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object; pass (dict "root" $ "component" "gateway"). */}}
{{- define "carbongate.labels" -}}
helm.sh/chart: {{ include "carbongate.chart" .root }}
{{ include "carbongate.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: carbongate
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Selector labels: stable for the life of a release (Deployment selectors are immutable). */}}
{{- define "carbongate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "carbongate.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "carbongate.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "carbongate.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* An image reference; the tag defaults to v<appVersion>. Pass (dict "root" $ "image" .Values.image). */}}
{{- define "carbongate.image" -}}
{{- printf "%s:%s" .image.repository (default (printf "v%s" .root.Chart.AppVersion) .image.tag) }}
{{- end }}

{{/* Namespace of the KServe objects and of the discovery Role. */}}
{{- define "carbongate.kserveNamespace" -}}
{{- default .Release.Namespace .Values.kserve.namespace }}
{{- end }}

{{/* In-cluster URL of the gateway's HTTP API. */}}
{{- define "carbongate.url" -}}
{{- printf "http://%s.%s.svc:%d" (include "carbongate.fullname" .) .Release.Namespace (int .Values.service.port) }}
{{- end }}

{{/* A secretKeyRef env entry; pass (dict "name" ENV "secret" NAME "key" KEY). */}}
{{- define "carbongate.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .secret }}
      key: {{ .key }}
{{- end }}

{{/* The gateway's registry environment: the URI and the write token, from Secrets. */}}
{{- define "carbongate.registryEnv" -}}
{{- with .Values.registry }}
{{- if .enabled }}
{{ include "carbongate.secretEnv" (dict "name" "CARBONGATE_REGISTRY_URI" "secret" .uriSecret.name "key" .uriSecret.key) }}
{{- if .tokenSecret.name }}
{{ include "carbongate.secretEnv" (dict "name" "CARBONGATE_REGISTRY_TOKEN" "secret" .tokenSecret.name "key" .tokenSecret.key) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The gateway's production-mode environment: the store URL and the ingest credentials, from
Secrets (carbongate reads $ELECTRICITYMAPS_TOKEN, $WATTTIME_USERNAME and $WATTTIME_PASSWORD).
*/}}
{{- define "carbongate.productionEnv" -}}
{{- if .Values.store.enabled }}
{{ include "carbongate.storeSecretEnv" . }}
{{- end }}
{{- $vendor := .Values.vendorForecast.vendor }}
{{- with .Values.ingest.electricityMaps }}
{{- if or .zones (eq $vendor "electricitymaps") }}
{{ include "carbongate.secretEnv" (dict "name" "ELECTRICITYMAPS_TOKEN" "secret" .tokenSecret.name "key" .tokenSecret.key) }}
{{- end }}
{{- end }}
{{- with .Values.ingest.wattTime }}
{{- if .regions }}
{{ include "carbongate.secretEnv" (dict "name" "WATTTIME_USERNAME" "secret" .credentialsSecret.name "key" .credentialsSecret.usernameKey) }}
{{ include "carbongate.secretEnv" (dict "name" "WATTTIME_PASSWORD" "secret" .credentialsSecret.name "key" .credentialsSecret.passwordKey) }}
{{- end }}
{{- end }}
{{- end }}

{{/* $CARBONGATE_STORE from store.uriSecret (the gateway's --store, carbonctl's default --store). */}}
{{- define "carbongate.storeSecretEnv" -}}
{{ include "carbongate.secretEnv" (dict "name" "CARBONGATE_STORE" "secret" .Values.store.uriSecret.name "key" .Values.store.uriSecret.key) }}
{{- end }}

{{/*
The S3 environment carbongate's and carbonctl's S3 client reads (AWS_ENDPOINT_URL, AWS_REGION,
S3_VERIFY_SSL, the keys and a session token from a Secret; without a Secret the credential
chain: IRSA's variables come from EKS), shared by the gateway and the backfill.
*/}}
{{- define "carbongate.s3Env" -}}
{{- with .Values.s3 }}
{{- if .enabled }}
{{- if .endpoint }}
- name: AWS_ENDPOINT_URL
  value: {{ .endpoint | quote }}
{{- end }}
{{- if .region }}
- name: AWS_REGION
  value: {{ .region | quote }}
{{- end }}
{{- if not .verifyTLS }}
- name: S3_VERIFY_SSL
  value: "0"
{{- end }}
{{- with .credentialsSecret }}
{{- if .name }}
{{ include "carbongate.secretEnv" (dict "name" "AWS_ACCESS_KEY_ID" "secret" .name "key" .accessKeyIdKey) }}
{{ include "carbongate.secretEnv" (dict "name" "AWS_SECRET_ACCESS_KEY" "secret" .name "key" .secretAccessKeyKey) }}
{{- if .sessionTokenKey }}
{{ include "carbongate.secretEnv" (dict "name" "AWS_SESSION_TOKEN" "secret" .name "key" .sessionTokenKey) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The gateway's production-mode flags: the store, and the pollers with their settings (the
credentials are in carbongate.productionEnv).
*/}}
{{- define "carbongate.storeArgs" -}}
{{- if .Values.store.enabled }}
# $(VAR) is expanded by the kubelet from the env below (a Secret).
- --store=$(CARBONGATE_STORE)
{{- if .Values.store.migrate }}
- --store-migrate
{{- end }}
{{- end }}
{{- $em := .Values.ingest.electricityMaps }}
{{- $wt := .Values.ingest.wattTime }}
{{- $vf := .Values.vendorForecast }}
{{- if $em.zones }}
- {{ printf "--ingest-zones=%s" (join "," $em.zones) | quote }}
- {{ printf "--ingest-signals=%s" (join "," $em.signals) | quote }}
{{- end }}
{{- if or $em.zones (eq $vf.vendor "electricitymaps") }}
{{- with $em.url }}
- {{ printf "--electricitymaps-url=%s" . | quote }}
{{- end }}
{{- end }}
{{- if $wt.regions }}
{{- $pairs := list }}
{{- range $zone, $region := $wt.regions }}
{{- $pairs = append $pairs (printf "%s=%s" $zone $region) }}
{{- end }}
- {{ printf "--watttime-regions=%s" (join "," $pairs) | quote }}
{{- with $wt.url }}
- {{ printf "--watttime-url=%s" . | quote }}
{{- end }}
{{- end }}
{{- if or $em.zones $wt.regions }}
- --ingest-interval={{ .Values.ingest.interval }}
- --ingest-backfill={{ .Values.ingest.backfill }}
{{- end }}
{{- with $vf.vendor }}
- {{ printf "--vendor-forecast=%s" . | quote }}
- {{ printf "--vendor-position=%s" $vf.position | quote }}
- --vendor-horizon={{ $vf.horizon }}
{{- if $vf.storeZones }}
- {{ printf "--vendor-store-zones=%s" (join "," $vf.storeZones) | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The backfill's flags: the plan from values, then backfill.args. The store URL and the registry
URI are not flags: carbonctl reads $CARBONGATE_STORE and $CARBONGATE_REGISTRY, like the Indexed
Job of `carbonctl deploy render --backfill`.
*/}}
{{- define "carbongate.backfillArgs" -}}
{{- $b := .Values.backfill }}
- backfill
- {{ printf "--zones=%s" (join "," $b.zones) | quote }}
- {{ printf "--from=%s" $b.from | quote }}
- {{ printf "--to=%s" $b.to | quote }}
- --every={{ $b.every }}
- --horizon={{ $b.horizon }}
- {{ printf "--model=%s" $b.model | quote }}
- --signal={{ $b.signal }}
- --workers={{ $b.workers }}
- --migrate={{ .Values.store.migrate }}
{{- with .Values.registry.artifactsDestination }}
- {{ printf "--artifacts-destination=%s" . | quote }}
{{- end }}
{{- with .Values.registry.artifactSources }}
- {{ printf "--artifact-sources=%s" (join "," .) | quote }}
{{- end }}
{{- with $b.args }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The backfill's environment: store, registry and S3, every credential from a Secret. */}}
{{- define "carbongate.backfillEnv" -}}
{{ include "carbongate.storeSecretEnv" . }}
{{ include "carbongate.secretEnv" (dict "name" "CARBONGATE_REGISTRY" "secret" .Values.registry.uriSecret.name "key" .Values.registry.uriSecret.key) }}
{{- with include "carbongate.s3Env" . | trim }}
{{ . }}
{{- end }}
{{- end }}

{{/*
Checks no JSON schema can express; every template includes this, so a bad combination fails
the render with a message naming the values.
*/}}
{{- define "carbongate.validate" -}}
{{- $g := .Values.gateway }}
{{- if le (int $g.terminationGracePeriodSeconds) (add $g.drainDelaySeconds $g.shutdownTimeoutSeconds | int) }}
{{- fail (printf "gateway.terminationGracePeriodSeconds (%d) must exceed gateway.drainDelaySeconds + gateway.shutdownTimeoutSeconds (%d)" (int $g.terminationGracePeriodSeconds) (add $g.drainDelaySeconds $g.shutdownTimeoutSeconds | int)) }}
{{- end }}
{{- if and .Values.registry.enabled (not .Values.registry.uriSecret.name) }}
{{- fail "registry.enabled needs registry.uriSecret.name: a Secret holding the postgres:// or crate:// URI" }}
{{- end }}
{{- $pdb := .Values.podDisruptionBudget }}
{{- if and $pdb.enabled (eq (kindIs "invalid" $pdb.maxUnavailable) (kindIs "invalid" $pdb.minAvailable)) }}
{{- fail "podDisruptionBudget: set exactly one of maxUnavailable and minAvailable" }}
{{- end }}
{{- if and .Values.autoscaling.enabled (gt (int .Values.autoscaling.minReplicas) (int .Values.autoscaling.maxReplicas)) }}
{{- fail "autoscaling.minReplicas must not exceed autoscaling.maxReplicas" }}
{{- end }}
{{- $a := .Values.admission }}
{{- if ne $a.mode "none" }}
{{- if not $a.tls.secretName }}
{{- fail (printf "admission.mode %s needs admission.tls.secretName: a kubernetes.io/tls Secret for the webhook server" $a.mode) }}
{{- end }}
{{- if le (int $a.timeoutSeconds) (int $a.carbongateTimeoutSeconds) }}
{{- fail "admission.timeoutSeconds must exceed admission.carbongateTimeoutSeconds" }}
{{- end }}
{{- end }}
{{- if eq $a.mode "opa" }}
{{- $b := $a.opa.bundle }}
{{- if and (eq $b.source "configMap") (not $b.configMap) }}
{{- fail "admission.opa.bundle.source configMap needs admission.opa.bundle.configMap" }}
{{- end }}
{{- if and (eq $b.source "url") (not $b.url) }}
{{- fail "admission.opa.bundle.source url needs admission.opa.bundle.url" }}
{{- end }}
{{- end }}
{{- $m := .Values.kserve.models }}
{{- if $m.enabled }}
{{- $seen := dict }}
{{- range $m.zones }}
{{- if eq (lower .) "generic" }}
{{- fail "kserve.models.zones: the zone id generic is reserved for the generic model" }}
{{- end }}
{{- if hasKey $seen (upper .) }}
{{- fail (printf "kserve.models.zones: zone %s is listed twice" (upper .)) }}
{{- end }}
{{- $_ := set $seen (upper .) true }}
{{- $name := printf "%s-%s" $m.namePrefix (lower .) }}
{{- if gt (len $name) 63 }}
{{- fail (printf "kserve.models: InferenceService name %s is longer than 63 characters" $name) }}
{{- end }}
{{- end }}
{{- if and (not (kindIs "invalid" $m.minReplicas)) (gt (int $m.maxReplicas) 0) (lt (int $m.maxReplicas) (int $m.minReplicas)) }}
{{- fail "kserve.models.maxReplicas is below kserve.models.minReplicas" }}
{{- end }}
{{- end }}
{{- include "carbongate.validateStore" . }}
{{- include "carbongate.validateKarmada" . }}
{{- end }}

{{/* The Karmada checks of carbongate.validate. */}}
{{- define "carbongate.validateKarmada" -}}
{{- $k := .Values.karmada }}
{{- if and (eq $k.side "apiServer") (not $k.enabled) }}
{{- fail "karmada.side apiServer needs karmada.enabled: install it with the values of the host release" }}
{{- end }}
{{- if $k.enabled }}
{{- if ne .Values.admission.mode "carbongate" }}
{{- fail "karmada.enabled needs admission.mode carbongate: carbongate's own webhook places the bindings" }}
{{- end }}
{{- if and (eq $k.side "host") (not $k.kubeconfigSecret.name) }}
{{- fail "karmada.enabled needs karmada.kubeconfigSecret.name: a Secret holding a kubeconfig of Karmada's API server" }}
{{- end }}
{{- if and (eq $k.side "apiServer") (not (or $k.rbac.serviceAccount.create $k.rbac.subjects)) }}
{{- fail "karmada.rbac: neither serviceAccount.create nor subjects: the ClusterRole on Karmada's API server would be bound to no one" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The URL Karmada's API server calls the binding webhook at (karmada.webhook.url or the host release's Service). */}}
{{- define "carbongate.karmadaWebhookURL" -}}
{{- $k := .Values.karmada }}
{{- if $k.webhook.url }}
{{- $k.webhook.url }}
{{- else }}
{{- printf "https://%s.%s.svc:%d/v1/admission/mutate" (include "carbongate.fullname" .) (default .Release.Namespace $k.hostNamespace) (int .Values.service.port) }}
{{- end }}
{{- end }}

{{/* Fails when a zone id is listed twice (zone ids are case-insensitive); pass (dict "field" F "zones" LIST). */}}
{{- define "carbongate.uniqueZones" -}}
{{- $seen := dict }}
{{- range .zones }}
{{- if hasKey $seen (upper .) }}
{{- fail (printf "%s: zone %s is listed twice" $.field (upper .)) }}
{{- end }}
{{- $_ := set $seen (upper .) true }}
{{- end }}
{{- end }}

{{/* The production-mode and backfill checks of carbongate.validate. */}}
{{- define "carbongate.validateStore" -}}
{{- $st := .Values.store }}
{{- $em := .Values.ingest.electricityMaps }}
{{- $wt := .Values.ingest.wattTime }}
{{- if and $st.enabled (not $st.uriSecret.name) }}
{{- fail "store.enabled needs store.uriSecret.name: a Secret holding the postgres:// or crate:// URL of the observed-signals store" }}
{{- end }}
{{- $vf := .Values.vendorForecast }}
{{- if and (or $em.zones (and $wt.regions (ne $vf.vendor "watttime"))) (not $st.enabled) }}
{{- fail "ingest.electricityMaps.zones and ingest.wattTime.regions need store.enabled: the pollers write into the store" }}
{{- end }}
{{- if not (has $vf.vendor (list "" "electricitymaps" "watttime")) }}
{{- fail "vendorForecast.vendor must be electricitymaps, watttime or empty" }}
{{- end }}
{{- if not (has $vf.position (list "first" "after-zone" "after-generic" "last")) }}
{{- fail "vendorForecast.position must be first, after-zone, after-generic or last" }}
{{- end }}
{{- if and (eq $vf.vendor "electricitymaps") (not $em.tokenSecret.name) }}
{{- fail "vendorForecast.vendor electricitymaps needs ingest.electricityMaps.tokenSecret.name: a Secret holding the Electricity Maps API token" }}
{{- end }}
{{- if and (eq $vf.vendor "watttime") (not $wt.regions) }}
{{- fail "vendorForecast.vendor watttime needs ingest.wattTime.regions (the zones whose marginal signal it forecasts) and credentialsSecret.name" }}
{{- end }}
{{- if and $vf.storeZones (not (and $vf.vendor $st.enabled)) }}
{{- fail "vendorForecast.storeZones needs vendorForecast.vendor and store.enabled: the vendor's forecasts are stored there" }}
{{- end }}
{{- if and $em.zones (not $em.tokenSecret.name) }}
{{- fail "ingest.electricityMaps.zones needs ingest.electricityMaps.tokenSecret.name: a Secret holding the Electricity Maps API token" }}
{{- end }}
{{- if and $wt.regions (not $wt.credentialsSecret.name) }}
{{- fail "ingest.wattTime.regions needs ingest.wattTime.credentialsSecret.name: a Secret holding the WattTime user name and password" }}
{{- end }}
{{- include "carbongate.uniqueZones" (dict "field" "ingest.electricityMaps.zones" "zones" $em.zones) }}
{{- include "carbongate.uniqueZones" (dict "field" "ingest.wattTime.regions" "zones" (keys $wt.regions)) }}
{{- include "carbongate.uniqueZones" (dict "field" "backfill.zones" "zones" .Values.backfill.zones) }}
{{- $b := .Values.backfill }}
{{- if $b.enabled }}
{{- if not $st.enabled }}
{{- fail "backfill.enabled needs store.enabled: the backfill reads the observed history from the store and writes its forecasts into it" }}
{{- end }}
{{- if not .Values.registry.enabled }}
{{- fail "backfill.enabled needs registry.enabled: backfill.model is resolved in the registry" }}
{{- end }}
{{- if not $b.zones }}
{{- fail "backfill.enabled needs backfill.zones: the zones to backfill" }}
{{- end }}
{{- range $b.args }}
{{- $flag := regexReplaceAll "=.*$" (trimPrefix "-" (trimPrefix "-" .)) "" }}
{{- if has $flag (list "store" "registry") }}
{{- fail (printf "backfill.args: --%s is set from its Secret (%s.uriSecret), not on the command line" $flag $flag) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Scheme of the gateway's port, also its port name (so that meshes detect the protocol):
carbongate's own webhook mode serves the whole API over TLS on it (the API server only calls
webhooks over HTTPS).
*/}}
{{- define "carbongate.scheme" -}}
{{- if eq .Values.admission.mode "carbongate" }}https{{ else }}http{{ end }}
{{- end }}

{{/* carbongate's webhook flags (admission.mode carbongate; deploy/webhook). */}}
{{- define "carbongate.admissionArgs" -}}
- --admission
- --tls-cert=/etc/carbongate/webhook-tls/tls.crt
- --tls-key=/etc/carbongate/webhook-tls/tls.key
{{- if .Values.admission.clientCA.secretName }}
- --admission-client-ca=/etc/carbongate/webhook-client-ca/ca.crt
{{- end }}
- --admission-fail-open={{ .Values.admission.failOpen }}
- --admission-timeout={{ .Values.admission.carbongateTimeoutSeconds }}s
{{- end }}

{{/*
Whether a file under files/opa belongs in the bundle ConfigMap: policies (not their tests),
data files and the manifest. Prints "true" or nothing.
*/}}
{{- define "carbongate.opaBundleFile" -}}
{{- $base := base . }}
{{- if and (hasSuffix ".rego" $base) (not (hasSuffix "_test.rego" $base)) }}true
{{- else if has $base (list "data.json" "data.yaml" "data.yml" ".manifest") }}true
{{- end }}
{{- end }}

{{/* ConfigMap key of a bundle file: its path under files/opa with "/" spelt "..". */}}
{{- define "carbongate.opaBundleKey" -}}
{{- trimPrefix "files/opa/" . | replace "/" ".." }}
{{- end }}

{{/* OPA's configuration file. */}}
{{- define "carbongate.opaConfig" -}}
{{- $o := .Values.admission.opa -}}
default_decision: {{ $o.decision }}
{{- if eq $o.bundle.source "url" }}
services:
  bundles:
    url: {{ $o.bundle.url }}
bundles:
  carbongate:
    service: bundles
    resource: {{ $o.bundle.resource }}
    polling:
      min_delay_seconds: {{ $o.bundle.minDelaySeconds }}
      max_delay_seconds: {{ $o.bundle.maxDelaySeconds }}
{{- end }}
{{- end }}

{{/* data of the bundle ConfigMap: the chart's files/opa bundle files. */}}
{{- define "carbongate.opaBundleData" -}}
{{- range $path, $_ := .Files.Glob "files/opa/**" }}
{{- if include "carbongate.opaBundleFile" $path }}
{{ include "carbongate.opaBundleKey" $path }}: {{ $.Files.Get $path | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/*
"true" when this release is the host side (karmada.side host, the default): every template but
karmada-apiserver.yaml renders only then; a release on Karmada's API server (karmada.side
apiServer) renders that file alone.
*/}}
{{- define "carbongate.hostSide" -}}
{{- if eq .Values.karmada.side "host" }}true{{ end }}
{{- end }}
