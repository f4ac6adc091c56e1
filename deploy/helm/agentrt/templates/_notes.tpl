{{/*
The install notes, as a named template so the umbrella chart (agentrt-with-nats), whose own
NOTES.txt is the only one helm prints, shows them too.
*/}}
{{- define "agentrt.notes" -}}
agentrt {{ default .Chart.AppVersion .Values.image.tag }} is installed as "{{ .Release.Name }}" in namespace {{ .Release.Namespace }}.

{{- if .Values.nats.embedded.enabled }}
NATS: built-in {{ .Values.nats.embedded.replicas }}-node JetStream cluster ({{ include "agentrt.embeddedNatsName" . }}), streams at R{{ .Values.config.natsStreamReplicas }}.
{{- else }}
NATS: external ({{ if .Values.externalNats.existingSecret }}URL from Secret {{ .Values.externalNats.existingSecret }}{{ else }}{{ .Values.externalNats.url }}{{ end }}), streams at R{{ .Values.config.natsStreamReplicas }}.
{{- end }}

Reach the API:
{{- if .Values.webGateway.ingress.enabled }}
{{- range .Values.webGateway.ingress.hosts }}
  curl -H "Authorization: Bearer <key>" http{{ if $.Values.webGateway.ingress.tls }}s{{ end }}://{{ .host }}/v1/agents
{{- end }}
{{- else }}
  kubectl -n {{ .Release.Namespace }} port-forward svc/{{ include "agentrt.fullname" . }}-web-gateway 8080:{{ .Values.webGateway.service.httpPort }}
  curl -H "Authorization: Bearer <key>" http://127.0.0.1:8080/v1/agents
{{- end }}
{{- if .Values.helmTest.enabled }}

Check a whole turn end to end:
  helm test {{ .Release.Name }} -n {{ .Release.Namespace }}
{{- end }}

{{- if and (not .Values.webGateway.apiKeys.existingSecret) (not .Values.webGateway.apiKeys.keys) }}

WARNING: no API keys are configured (webGateway.apiKeys.keys / existingSecret), so the gateway
refuses every request.
{{- end }}
{{- $np := .Values.networkPolicy }}
{{- if and $np.enabled (ne .Values.webGateway.service.type "ClusterIP") (not (regexMatch "ipBlock" (toJson $np.gatewayIngressPeers))) }}

WARNING: the gateway Service is a {{ .Values.webGateway.service.type }}, but its NetworkPolicy admits only
networkPolicy.gatewayIngressPeers (your ingress controller's pods) and no client addresses: traffic
arriving through the {{ .Values.webGateway.service.type }} is dropped where the CNI enforces NetworkPolicy.
Add the clients' addresses. Helm replaces a list as a whole, and --set on one index does too (the
other entries are lost), so give every peer, the ones you have and the clients', e.g. for clients
in 203.0.113.0/24:
  --set-json '{{ .ValuesPrefix | default "" }}networkPolicy.gatewayIngressPeers={{ toJson (append $np.gatewayIngressPeers (dict "ipBlock" (dict "cidr" "203.0.113.0/24"))) }}'
{{- end }}
{{- if and .Values.webGateway.ingress.enabled (not .Values.webGateway.ingress.tls) }}

WARNING: the Ingress has no TLS (webGateway.ingress.tls): API keys cross the network in clear text,
and a browser's live stream carries its key in the URL (?apiKey=), which ingress controllers'
access logs keep. Set webGateway.ingress.tls, or terminate TLS in front of the Ingress.
{{- end }}
{{- if and .Values.nats.embedded.enabled (not .Values.nats.auth.enabled) }}

WARNING: nats.auth.enabled=false: the built-in NATS takes clients without a user, so any pod that
reaches its port 4222 reads and writes every agent's events, work and files; only the
NetworkPolicy stands in the way, where the CNI enforces one.
{{- end }}
{{- if not .Values.eventSigning.enabled }}

WARNING: eventSigning.enabled=false: records are not signed, so any service's NATS credentials can
write another service's events (a model reply whose script the capability host then runs).
{{- end }}
{{- if not .Values.networkPolicy.enabled }}

WARNING: networkPolicy.enabled=false: the capability host, which runs model-written code, may
reach any address, and anything in the cluster may reach NATS and the services' ops ports.
{{- end }}
{{- if and (not .Values.llmDriver.modelKeys.existingSecret) (not (include "agentrt.modelKeysInline" .)) }}

NOTE: no model key is configured: agents answer with the built-in offline model.
{{- end }}
{{- end }}
