{{/*
NATS users per service (least privilege). The permission lists are files/nats-authorization.conf,
generated from packages/service-kit/src/nats-permissions.ts; its passwords are
$AGENTRT_NATS_PASSWORD_<USER> references that the built-in nats-server reads from env filled from
the users' Secret. Each service gets NATS_USER and NATS_PASSWORD from the same Secret.
Active with the built-in NATS, or with an external NATS when nats.auth.existingSecret names the
passwords its server was configured with.
*/}}
{{- define "agentrt.natsUsers" -}}
web-gateway agent-reducer llm-driver capability-host capability-provider
{{- end }}

{{- define "agentrt.natsAuthActive" -}}
{{- if and .Values.nats.auth.enabled (or .Values.nats.embedded.enabled .Values.nats.auth.existingSecret) }}true{{ end }}
{{- end }}

{{- define "agentrt.natsUsersSecretName" -}}
{{- default (printf "%s-nats-users" (include "agentrt.fullname" .)) .Values.nats.auth.existingSecret -}}
{{- end }}

{{/* The authorization block appended to the built-in nats.conf. */}}
{{- define "agentrt.natsAuthConf" -}}
{{- if include "agentrt.natsAuthActive" . }}
{{ .Files.Get "files/nats-authorization.conf" }}
{{- end }}
{{- end }}

{{/* Env of the built-in nats-server: one password variable per user, from the Secret. */}}
{{- define "agentrt.natsAuthServerEnv" -}}
{{- if include "agentrt.natsAuthActive" . }}
{{- range $user := splitList " " (include "agentrt.natsUsers" .) }}
- name: {{ printf "AGENTRT_NATS_PASSWORD_%s" (upper (replace "-" "_" $user)) }}
  valueFrom:
    secretKeyRef:
      name: {{ include "agentrt.natsUsersSecretName" $ }}
      key: {{ $user }}
{{- end }}
{{- end }}
{{- end }}

{{/* NATS_USER and NATS_PASSWORD of one service: (dict "root" $ "user" "<service>"). */}}
{{- define "agentrt.natsUserEnv" -}}
{{- if include "agentrt.natsAuthActive" .root }}
- name: NATS_USER
  value: {{ .user | quote }}
- name: NATS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "agentrt.natsUsersSecretName" .root }}
      key: {{ .user }}
{{- end }}
{{- end }}
