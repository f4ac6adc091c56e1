{{/*
Names, labels and shared fragments for every object in the chart.
*/}}

{{- define "agentrt.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Release-scoped base name; component objects append "-<component>" to it. */}}
{{- define "agentrt.eventKeysSecretName" -}}
{{- default (printf "%s-event-keys" (include "agentrt.fullname" .)) .Values.eventSigning.existingSecret -}}
{{- end }}

{{/*
A service pod's event keys (eventSigning): its own private key (the agent-reducer's also the
llm-driver's when it runs the driver), every public key and the cut-off, read-only at
EVENT_KEYS_DIR. (dict "root" $ "component" "<service>")
*/}}
{{/* The services that sign their records (SIGNING_SERVICES in service-kit), space-separated. */}}
{{- define "agentrt.signingServices" -}}
web-gateway agent-reducer llm-driver capability-host
{{- end }}

{{- define "agentrt.eventKeyFiles" -}}
{{- $own := list .component }}
{{- if and (eq .component "agent-reducer") (eq .root.Values.llmDriver.placement "agent-reducer") }}
{{- $own = append $own "llm-driver" }}
{{- end }}
{{- range $own }}
- key: {{ . }}.key
  path: {{ . }}.key
{{- end }}
{{- range splitList " " (include "agentrt.signingServices" .root) }}
- key: {{ . }}.pub
  path: {{ . }}.pub
{{- end }}
{{- end }}

{{- define "agentrt.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "agentrt.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "agentrt.labels" -}}
helm.sh/chart: {{ include "agentrt.chart" . }}
{{ include "agentrt.selectorLabels" . }}
app.kubernetes.io/part-of: agentrt
app.kubernetes.io/version: {{ (default .Chart.AppVersion .Values.image.tag) | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "agentrt.selectorLabels" -}}
app.kubernetes.io/name: {{ include "agentrt.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
The built-in NATS pods' labels: no chart or app version, so releasing the runtime (a new image
tag, a new chart version) does not roll the NATS cluster; its own image tag is its version.
*/}}
{{- define "agentrt.natsPodLabels" -}}
{{ include "agentrt.selectorLabels" .root }}
app.kubernetes.io/component: {{ .component }}
app.kubernetes.io/part-of: agentrt
app.kubernetes.io/version: {{ .root.Values.nats.embedded.image.tag | quote }}
{{- end }}

{{/* Labels of one component. Call with (dict "root" $ "component" "llm-driver"). */}}
{{- define "agentrt.componentLabels" -}}
{{ include "agentrt.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "agentrt.componentSelectorLabels" -}}
{{ include "agentrt.selectorLabels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "agentrt.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "agentrt.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The image reference; with image.digest the digest pins it (the tag is then informative). */}}
{{- define "agentrt.image" -}}
{{- $ref := printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag | toString) }}
{{- if .Values.image.digest }}
{{- $ref = printf "%s@%s" $ref .Values.image.digest }}
{{- end }}
{{- $ref }}
{{- end }}

{{/* Name of the Secret holding the gateway's API keys file. */}}
{{- define "agentrt.apiKeysSecretName" -}}
{{- default (printf "%s-api-keys" (include "agentrt.fullname" .)) .Values.webGateway.apiKeys.existingSecret }}
{{- end }}

{{/* Name of the Secret holding model provider keys, or "" when there is none. */}}
{{- define "agentrt.modelKeysSecretName" -}}
{{- if .Values.llmDriver.modelKeys.existingSecret }}
{{- .Values.llmDriver.modelKeys.existingSecret }}
{{- else if include "agentrt.modelKeysInline" . }}
{{- printf "%s-model-keys" (include "agentrt.fullname" .) }}
{{- end }}
{{- end }}

{{/* Non-empty when values carry at least one model key to put in a chart-made Secret. */}}
{{- define "agentrt.modelKeysInline" -}}
{{- range $k, $v := .Values.llmDriver.modelKeys.keys }}{{ if $v }}1{{ end }}{{ end }}
{{- end }}

{{- define "agentrt.embeddedNatsName" -}}
{{- printf "%s-nats" (include "agentrt.fullname" .) }}
{{- end }}

{{/*
Replication factor the services ask JetStream for. With the built-in cluster it may not exceed
the number of NATS nodes; JetStream allows 1 to 5.
*/}}
{{- define "agentrt.streamReplicas" -}}
{{- $r := int .Values.config.natsStreamReplicas }}
{{- if or (lt $r 1) (gt $r 5) }}
{{- fail (printf "config.natsStreamReplicas must be between 1 and 5 (JetStream's limit), got %v" .Values.config.natsStreamReplicas) }}
{{- end }}
{{- if and .Values.nats.embedded.enabled (gt $r (int .Values.nats.embedded.replicas)) }}
{{- fail (printf "config.natsStreamReplicas (%d) cannot exceed nats.embedded.replicas (%d): JetStream needs one node per replica" $r (int .Values.nats.embedded.replicas)) }}
{{- end }}
{{- $r }}
{{- end }}

{{/*
The NATS_URL env entry: the built-in cluster's client Service, a URL from values, or a URL
read from an existing Secret (for URLs that carry credentials).
*/}}
{{- define "agentrt.natsUrlEnv" -}}
{{- if .Values.nats.embedded.enabled }}
- name: NATS_URL
  value: {{ printf "nats://%s.%s.svc.%s:4222" (include "agentrt.embeddedNatsName" .) .Release.Namespace .Values.clusterDomain | quote }}
{{- else if .Values.externalNats.existingSecret }}
- name: NATS_URL
  valueFrom:
    secretKeyRef:
      name: {{ .Values.externalNats.existingSecret }}
      key: {{ .Values.externalNats.existingSecretKey }}
{{- else if .Values.externalNats.url }}
- name: NATS_URL
  value: {{ tpl .Values.externalNats.url . | quote }}
{{- else }}
{{- fail "set externalNats.url (or externalNats.existingSecret) when nats.embedded.enabled is false" }}
{{- end }}
{{- end }}

{{/* Env every service shares. */}}
{{- define "agentrt.commonEnv" -}}
{{ include "agentrt.natsUrlEnv" . | trim }}
- name: NATS_STREAM_REPLICAS
  value: {{ include "agentrt.streamReplicas" . | quote }}
- name: PARTITION_COUNT
  value: {{ .Values.config.partitionCount | quote }}
- name: OPS_HOST
  value: "0.0.0.0"
- name: OPS_PORT
  value: {{ .Values.config.opsPort | quote }}
- name: LOG_LEVEL
  value: {{ .Values.config.logLevel | quote }}
{{- end }}

{{/* The quotas' env: for the services that append from outside the machinery (gateway, host). */}}
{{- define "agentrt.quotaEnv" -}}
{{- with .Values.config.quotas }}
{{- /* int64: a YAML number over 2^31 would otherwise print as 1.7e+10. */}}
- name: AGENT_STREAM_QUOTA_BYTES
  value: {{ .streamBytes | int64 | quote }}
- name: AGENT_STREAM_QUOTA_EVENTS
  value: {{ .streamEvents | int64 | quote }}
- name: AGENT_TENANT_DEPTH
  value: {{ .tenantDepth | int64 | quote }}
- name: AGENT_TENANT_QUOTA_BYTES
  value: {{ .tenantBytes | int64 | quote }}
- name: AGENT_TENANT_QUOTA_STREAMS
  value: {{ .tenantStreams | int64 | quote }}
{{- end }}
{{- end }}

{{/*
terminationGracePeriodSeconds of a service: the longest its own SIGTERM drain may take (the
drain limit the service enforces, in milliseconds, passed as .drainMs) plus
shutdown.marginSeconds for process exit and the kubelet's bookkeeping. An explicit
terminationGracePeriodSeconds may only raise it: below the drain, SIGKILL cuts work off.
*/}}
{{- define "agentrt.gracePeriod" -}}
{{- $derived := add (div (add (int64 .drainMs) 999) 1000) (int .root.Values.shutdown.marginSeconds) }}
{{- $explicit := .values.terminationGracePeriodSeconds }}
{{- if and (not (kindIs "invalid" $explicit)) (ne (toString $explicit) "") }}
{{- if lt (int64 $explicit) (int64 $derived) }}
{{- fail (printf "%s.terminationGracePeriodSeconds (%v) is shorter than the service's own drain (%v s incl. margin): pods would be killed mid-drain" .key $explicit $derived) }}
{{- end }}
{{- $explicit }}
{{- else }}
{{- $derived }}
{{- end }}
{{- end }}

{{/*
How long a service's stop() may run before it exits anyway: service-kit's runService default
(DEFAULT_STOP_TIMEOUT_MS; test/helm pins the two together).
*/}}
{{- define "agentrt.stopTimeoutMs" -}}10000{{- end }}

{{/*
What an llm-driver needs in its pod, as YAML {env, envFrom, volumes, volumeMounts, checksum}:
the provider table (a ConfigMap, or a Secret's file), context windows, OPENAI_BASE_URL,
LLM_CONCURRENCY, AGENT_TENANT_DEPTH and the model keys Secret. Its own Deployment's pods get it, or, with
llmDriver.placement "agent-reducer", the agent-reducer's pods, which run the driver in-process.
*/}}
{{- define "agentrt.llmDriverPodParts" -}}
{{- $c := .Values.llmDriver }}
{{- $cm := printf "%s-llm-driver" (include "agentrt.fullname" .) }}
{{- $providersDir := "/etc/agentrt/llm-providers" }}
{{- $env := list }}
{{- $volumes := list }}
{{- $mounts := list }}
{{- if $c.providersSecret.existingSecret }}
{{- $env = append $env (dict "name" "LLM_PROVIDERS" "value" (printf "%s/%s" $providersDir $c.providersSecret.key)) }}
{{- $volumes = append $volumes (dict "name" "llm-providers" "secret" (dict "secretName" $c.providersSecret.existingSecret "defaultMode" 288)) }}
{{- $mounts = append $mounts (dict "name" "llm-providers" "mountPath" $providersDir "readOnly" true) }}
{{- else if $c.providers }}
{{- $env = append $env (dict "name" "LLM_PROVIDERS" "valueFrom" (dict "configMapKeyRef" (dict "name" $cm "key" "LLM_PROVIDERS"))) }}
{{- end }}
{{- if $c.contextWindows }}
{{- $env = append $env (dict "name" "LLM_CONTEXT_WINDOWS" "valueFrom" (dict "configMapKeyRef" (dict "name" $cm "key" "LLM_CONTEXT_WINDOWS"))) }}
{{- end }}
{{- if $c.openaiBaseUrl }}
{{- $env = append $env (dict "name" "OPENAI_BASE_URL" "value" $c.openaiBaseUrl) }}
{{- end }}
{{- if $c.openaiModel }}
{{- $env = append $env (dict "name" "OPENAI_MODEL" "value" $c.openaiModel) }}
{{- end }}
{{- $env = append $env (dict "name" "LLM_CONCURRENCY" "value" ($c.concurrency | toString)) }}
{{- $env = append $env (dict "name" "LLM_DRAIN_MS" "value" (mul (int64 $c.drainSeconds) 1000 | toString)) }}
{{- /* Its slots are shared fairly between tenants as the quotas count them. */}}
{{- $env = append $env (dict "name" "AGENT_TENANT_DEPTH" "value" (.Values.config.quotas.tenantDepth | int64 | toString)) }}
{{- $envFrom := list }}
{{- with include "agentrt.modelKeysSecretName" . }}
{{- $envFrom = append $envFrom (dict "secretRef" (dict "name" .)) }}
{{- end }}
{{- $checksum := cat (include (print $.Template.BasePath "/configmap.yaml") .) (include (print $.Template.BasePath "/secrets.yaml") .) | sha256sum }}
{{- toYaml (dict "env" $env "envFrom" $envFrom "volumes" $volumes "volumeMounts" $mounts "checksum" $checksum) }}
{{- end }}
