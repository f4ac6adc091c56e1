{{/*
nats.conf for the built-in cluster. Each node takes its server_name from the SERVER_NAME env
var (the pod name), which keeps its JetStream identity stable across restarts; routes list
every node through the headless Service (a node ignores the route to itself).
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
  routes: [
{{- range $i := until (int $n.replicas) }}
    "nats://{{ $name }}-{{ $i }}.{{ $name }}-headless.{{ $.Release.Namespace }}.svc.{{ $.Values.clusterDomain }}:6222"
{{- end }}
  ]
}
{{- end }}
{{- include "agentrt.natsAuthConf" . }}
{{- end }}
