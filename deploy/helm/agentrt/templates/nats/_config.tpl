{{/*
nats.conf for the built-in cluster. Each node takes its server_name from the SERVER_NAME env
var (the pod name), which keeps its JetStream identity stable across restarts; routes list
every node through the headless Service (a node ignores the route to itself) and authenticate
with the route password (agentrt.natsRouteEnv).
*/}}
{{- define "agentrt.natsConf" -}}
{{- $n := .Values.nats.embedded -}}
{{- $name := include "agentrt.embeddedNatsName" . -}}
server_name: $SERVER_NAME
listen: "0.0.0.0:4222"
http: "0.0.0.0:8222"
pid_file: "/var/run/nats/nats.pid"
max_payload: {{ int64 $n.maxPayload }}
lame_duck_duration: "{{ $n.lameDuckDuration }}"
lame_duck_grace_period: "10s"
jetstream {
  store_dir: "/data"
  max_memory_store: {{ $n.jetstream.maxMemoryStore }}
  max_file_store: {{ $n.jetstream.maxFileStore }}
}
{{- if gt (int $n.replicas) 1 }}
cluster {
  name: "{{ default $name $n.clusterName }}"
  listen: "0.0.0.0:6222"
  # A node joins only with the route password: a route bypasses every user's permissions, so
  # any pod reaching 6222 could otherwise join as a node and read or write everything.
  authorization {
    user: "route"
    password: $AGENTRT_NATS_ROUTE_PASSWORD
    timeout: 2
  }
  # Each URL, credentials included, is an env var of the pod (agentrt.natsRouteEnv).
  routes: [
{{- range $i := until (int $n.replicas) }}
    $AGENTRT_NATS_ROUTE_{{ $i }}
{{- end }}
  ]
}
{{- end }}
{{- include "agentrt.natsAuthConf" . }}
{{- end }}

{{- define "agentrt.natsRoutesSecretName" -}}
{{- default (printf "%s-routes" (include "agentrt.embeddedNatsName" .)) .Values.nats.embedded.routes.existingSecret -}}
{{- end }}

{{/*
Env of a built-in NATS node in a cluster: the route password from its Secret, and each route's
URL carrying it (the kubelet expands $(AGENTRT_NATS_ROUTE_PASSWORD); nats-server reads each
URL as a config variable).
*/}}
{{- define "agentrt.natsRouteEnv" -}}
{{- $n := .Values.nats.embedded -}}
{{- $name := include "agentrt.embeddedNatsName" . -}}
{{- if gt (int $n.replicas) 1 }}
- name: AGENTRT_NATS_ROUTE_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "agentrt.natsRoutesSecretName" . }}
      key: password
{{- range $i := until (int $n.replicas) }}
- name: AGENTRT_NATS_ROUTE_{{ $i }}
  value: "nats://route:$(AGENTRT_NATS_ROUTE_PASSWORD)@{{ $name }}-{{ $i }}.{{ $name }}-headless.{{ $.Release.Namespace }}.svc.{{ $.Values.clusterDomain }}:6222"
{{- end }}
{{- end }}
{{- end }}
