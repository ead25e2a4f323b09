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

{{/*
Environment shared by the gateway and the backfill job: the registry URI and token, and the
S3 settings, every credential through secretKeyRef.
*/}}
{{- define "carbongate.storeEnv" -}}
{{- with .Values.registry }}
{{- if .enabled }}
- name: CARBONGATE_REGISTRY_URI
  valueFrom:
    secretKeyRef:
      name: {{ .uriSecret.name }}
      key: {{ .uriSecret.key }}
{{- if .tokenSecret.name }}
- name: CARBONGATE_REGISTRY_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ .tokenSecret.name }}
      key: {{ .tokenSecret.key }}
{{- end }}
{{- end }}
{{- end }}
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
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ .credentialsSecret.name }}
      key: {{ .credentialsSecret.accessKeyIdKey }}
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .credentialsSecret.name }}
      key: {{ .credentialsSecret.secretAccessKeyKey }}
{{- end }}
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
{{- if and .Values.s3.enabled (not .Values.s3.credentialsSecret.name) }}
{{- fail "s3.enabled needs s3.credentialsSecret.name: a Secret holding the access key id and secret" }}
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
{{- if and .Values.backfill.enabled (not .Values.registry.enabled) }}
{{- fail "backfill.enabled needs registry.enabled: the backfill writes to the registry's database" }}
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
