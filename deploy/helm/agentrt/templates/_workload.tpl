{{/*
Shared shape of the four service workloads. Each service's template calls these with
  (dict "root" $ "component" "<name>" "values" .Values.<component> ...)
so the Deployments differ only where the services do (ports, env, volumes).
*/}}

{{/*
A service Deployment. Extra keys of the dict:
  ports        list of (dict "name" "port") beyond the ops port
  env          rendered YAML list of extra env entries (string)
  envFrom      rendered YAML list for envFrom (string)
  volumes      rendered YAML list of extra volumes (string)
  volumeMounts rendered YAML list of extra mounts (string)
  checksum     hash of the config the pods read, so a config change rolls them
*/}}
{{- define "agentrt.deployment" -}}
{{- $root := .root -}}
{{- $c := .values -}}
{{- $autoscaled := or (and (hasKey $c "autoscaling") $c.autoscaling.enabled) (and (hasKey $c "keda") $c.keda.enabled) -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "agentrt.fullname" $root }}-{{ .component }}
  labels:
    {{- include "agentrt.componentLabels" . | nindent 4 }}
spec:
  {{- if not $autoscaled }}
  replicas: {{ $c.replicaCount }}
  {{- end }}
  revisionHistoryLimit: {{ $root.Values.revisionHistoryLimit }}
  strategy:
    type: RollingUpdate
    rollingUpdate:
      # Bring the new pod up before the old one drains: work queues and leases move over
      # without a gap in capacity.
      maxUnavailable: 0
      maxSurge: 1
  selector:
    matchLabels:
      {{- include "agentrt.componentSelectorLabels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "agentrt.componentLabels" . | nindent 8 }}
        {{- with $c.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      annotations:
        checksum/config: {{ .checksum | default "none" | quote }}
        {{- with $c.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ include "agentrt.serviceAccountName" $root }}
      automountServiceAccountToken: {{ $root.Values.serviceAccount.automountToken }}
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $root.Values.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      securityContext:
        {{- toYaml $root.Values.podSecurityContext | nindent 8 }}
      # SIGTERM makes a service drain its NATS connection and finish in-flight work; the
      # period is derived from the service's own drain limit (agentrt.gracePeriod).
      terminationGracePeriodSeconds: {{ .gracePeriod }}
      containers:
        - name: {{ .component }}
          image: {{ include "agentrt.image" $root | quote }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          workingDir: {{ $root.Values.image.workingDir | quote }}
          {{- if $c.command }}
          command:
            {{- toYaml $c.command | nindent 12 }}
          {{- else }}
          command:
            {{- range $root.Values.image.commandPrefix }}
            - {{ . | quote }}
            {{- end }}
            - {{ printf "services/%s/dist/main.mjs" .component | quote }}
          {{- end }}
          ports:
            - name: ops
              containerPort: {{ $root.Values.config.opsPort }}
              protocol: TCP
            {{- range .ports }}
            - name: {{ .name }}
              containerPort: {{ .port }}
              protocol: TCP
            {{- end }}
          env:
            {{- include "agentrt.commonEnv" $root | nindent 12 }}
            {{- include "agentrt.natsUserEnv" (dict "root" $root "user" .component) | nindent 12 }}
            {{- if $root.Values.eventSigning.enabled }}
            - name: EVENT_KEYS_DIR
              value: /etc/agentrt/event-keys
            {{- end }}
            {{- if and .env (ne .env "[]") }}
            {{- .env | nindent 12 }}
            {{- end }}
            {{- with $c.extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          {{- with .lifecycle }}
          lifecycle:
            {{- . | nindent 12 }}
          {{- end }}
          {{- with .envFrom }}
          envFrom:
            {{- . | nindent 12 }}
          {{- end }}
          startupProbe:
            httpGet:
              path: /healthz
              port: ops
            {{- toYaml $root.Values.probes.startup | nindent 12 }}
          livenessProbe:
            httpGet:
              path: /healthz
              port: ops
            {{- toYaml $root.Values.probes.liveness | nindent 12 }}
          readinessProbe:
            httpGet:
              path: /readyz
              port: ops
            {{- toYaml $root.Values.probes.readiness | nindent 12 }}
          resources:
            {{- toYaml $c.resources | nindent 12 }}
          securityContext:
            {{- toYaml $root.Values.containerSecurityContext | nindent 12 }}
          volumeMounts:
            # The root filesystem is read-only; Node's temp files go here.
            - name: tmp
              mountPath: /tmp
            {{- if $root.Values.eventSigning.enabled }}
            - name: event-keys
              mountPath: /etc/agentrt/event-keys
              readOnly: true
            {{- end }}
            {{- with .volumeMounts }}
            {{- . | nindent 12 }}
            {{- end }}
            {{- with $c.extraVolumeMounts }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
      volumes:
        - name: tmp
          emptyDir:
            sizeLimit: {{ $root.Values.tmpVolumeSizeLimit }}
        {{- if $root.Values.eventSigning.enabled }}
        # Its own private key and every public key; the cut-off may be absent from your own Secret.
        - name: event-keys
          projected:
            defaultMode: 0400
            sources:
              - secret:
                  name: {{ include "agentrt.eventKeysSecretName" $root }}
                  items:
                    {{- include "agentrt.eventKeyFiles" (dict "root" $root "component" .component) | nindent 20 }}
              - secret:
                  name: {{ include "agentrt.eventKeysSecretName" $root }}
                  optional: true
                  items:
                    - key: unsigned-before
                      path: unsigned-before
              {{- with $root.Values.eventSigning.otherPublicKeysConfigMap }}
              # Other public keys of the services (<service>.<name>.pub): rotated keys, and when
              # each retired (<service>.<name>.retired).
              - configMap:
                  name: {{ . }}
              {{- end }}
        {{- end }}
        {{- with .volumes }}
        {{- . | nindent 8 }}
        {{- end }}
        {{- with $c.extraVolumes }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- with $c.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $c.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $c.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- if $c.topologySpreadConstraints }}
      topologySpreadConstraints:
        {{- toYaml $c.topologySpreadConstraints | nindent 8 }}
      {{- else if $root.Values.spreadAcrossNodes }}
      # Replicas on different nodes where possible, so one node going away takes at most one.
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: kubernetes.io/hostname
          whenUnsatisfiable: ScheduleAnyway
          labelSelector:
            matchLabels:
              {{- include "agentrt.componentSelectorLabels" . | nindent 14 }}
      {{- end }}
{{- end }}

{{/* PodDisruptionBudget for a component (values.pdb). */}}
{{- define "agentrt.pdb" -}}
{{- $c := .values -}}
{{- if $c.pdb.enabled }}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "agentrt.fullname" .root }}-{{ .component }}
  labels:
    {{- include "agentrt.componentLabels" . | nindent 4 }}
spec:
  {{- if $c.pdb.minAvailable }}
  minAvailable: {{ $c.pdb.minAvailable }}
  {{- else }}
  maxUnavailable: {{ $c.pdb.maxUnavailable | default 1 }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "agentrt.componentSelectorLabels" . | nindent 6 }}
{{- end }}
{{- end }}

{{/* HorizontalPodAutoscaler (autoscaling/v2) for a component (values.autoscaling). */}}
{{- define "agentrt.hpa" -}}
{{- $c := .values -}}
{{- if $c.autoscaling.enabled }}
{{- if gt (int $c.autoscaling.minReplicas) (int $c.autoscaling.maxReplicas) }}
{{- fail (printf "%s.autoscaling.minReplicas (%v) must not exceed maxReplicas (%v)" .key $c.autoscaling.minReplicas $c.autoscaling.maxReplicas) }}
{{- end }}
{{- if not (or $c.autoscaling.targetCPUUtilizationPercentage $c.autoscaling.targetMemoryUtilizationPercentage) }}
{{- fail (printf "%s.autoscaling needs targetCPUUtilizationPercentage or targetMemoryUtilizationPercentage" .key) }}
{{- end }}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ include "agentrt.fullname" .root }}-{{ .component }}
  labels:
    {{- include "agentrt.componentLabels" . | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ include "agentrt.fullname" .root }}-{{ .component }}
  minReplicas: {{ $c.autoscaling.minReplicas }}
  maxReplicas: {{ $c.autoscaling.maxReplicas }}
  metrics:
    {{- with $c.autoscaling.targetCPUUtilizationPercentage }}
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ . }}
    {{- end }}
    {{- with $c.autoscaling.targetMemoryUtilizationPercentage }}
    - type: Resource
      resource:
        name: memory
        target:
          type: Utilization
          averageUtilization: {{ . }}
    {{- end }}
  {{- with $c.autoscaling.behavior }}
  behavior:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
{{- end }}

{{/* ClusterIP Service over a component's ops port, for Prometheus and debugging. */}}
{{- define "agentrt.opsService" -}}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ include "agentrt.fullname" .root }}-{{ .component }}-ops
  labels:
    {{- include "agentrt.componentLabels" . | nindent 4 }}
    agentrt.io/ops: "true"
spec:
  type: ClusterIP
  selector:
    {{- include "agentrt.componentSelectorLabels" . | nindent 4 }}
  ports:
    - name: ops
      port: {{ .root.Values.config.opsPort }}
      targetPort: ops
      protocol: TCP
{{- end }}

{{/*
KEDA ScaledObject for a work-queue consumer (values.keda): scales on the pending items of the
service's durable consumer (.durable) of its kind's work-queue stream (.stream: AGENT_WORK_LLM or
AGENT_WORK_SCRIPT). Off by default; refuses to run beside the
CPU HPA, since both would steer the same Deployment.
*/}}
{{- define "agentrt.scaledObject" -}}
{{- $c := .values -}}
{{- if $c.keda.enabled }}
{{- if $c.autoscaling.enabled }}
{{- fail (printf "%s.keda.enabled and %s.autoscaling.enabled are both on: KEDA makes its own HPA, turn autoscaling off" .key .key) }}
{{- end }}
{{- $root := .root }}
{{- $endpoint := $c.keda.natsMonitoringEndpoint }}
{{- if not $endpoint }}
{{- if not $root.Values.nats.embedded.enabled }}
{{- fail (printf "%s.keda.natsMonitoringEndpoint is required with an external NATS" .key) }}
{{- end }}
{{- $endpoint = printf "%s.%s.svc.%s:8222" (include "agentrt.embeddedNatsName" $root) $root.Release.Namespace $root.Values.clusterDomain }}
{{- end }}
---
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: {{ include "agentrt.fullname" $root }}-{{ .component }}
  labels:
    {{- include "agentrt.componentLabels" . | nindent 4 }}
spec:
  scaleTargetRef:
    name: {{ include "agentrt.fullname" $root }}-{{ .component }}
  minReplicaCount: {{ $c.keda.minReplicas }}
  maxReplicaCount: {{ $c.keda.maxReplicas }}
  triggers:
    - type: nats-jetstream
      metadata:
        natsServerMonitoringEndpoint: {{ $endpoint | quote }}
        account: "$G"
        stream: {{ .stream | quote }}
        consumer: {{ .durable | quote }}
        lagThreshold: {{ $c.keda.lagThreshold | quote }}
{{- end }}
{{- end }}
