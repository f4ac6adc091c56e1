{{/*
NATS users per service (least privilege). The permission lists are files/nats-authorization.conf,
generated from packages/service-kit/src/nats-permissions.ts; its passwords are
$AGENTRT_NATS_PASSWORD_<USER> references that the built-in nats-server reads from env filled from
the users' Secret. Each service gets NATS_USER and NATS_PASSWORD from the same Secret.
Active with the built-in NATS, or with an external NATS when nats.auth.existingSecret names the
passwords its server was configured with.
*/}}
{{- define "agentrt.natsUsers" -}}
web-gateway agent-reducer llm-driver capability-host
{{- if .Values.nats.auth.sharedProviderUser }} capability-provider{{ end }}
{{- range $p := .Values.nats.auth.providers }} provider-{{ $p.name }}{{ end }}
{{- end }}

{{/*
nats.auth.providers: each its own user, bound to its namespaces (templates/nats/_provider-users.tpl).
The schema checks each entry's name and namespaces; one namespace served by two users, or one
name listed twice, is refused here.
*/}}
{{- define "agentrt.natsProvidersValid" -}}
{{- $servedBy := dict }}
{{- $names := dict }}
{{- range $i, $p := .Values.nats.auth.providers }}
{{- if hasKey $names $p.name }}
{{- fail (printf "nats.auth.providers[%d].name: %q is listed twice; one entry per provider user" $i $p.name) }}
{{- end }}
{{- $_ := set $names $p.name true }}
{{- range $ns := $p.namespaces }}
{{- if hasKey $servedBy $ns }}
{{- fail (printf "nats.auth.providers[%d].namespaces: %q is already served by provider-%s; one namespace, one provider user" $i $ns (get $servedBy $ns)) }}
{{- end }}
{{- $_ := set $servedBy $ns $p.name }}
{{- end }}
{{- end }}
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
{{- include "agentrt.natsProvidersValid" . }}
{{- $conf := .Files.Get "files/nats-authorization.conf" | replace "\n    # agentrt: the users of nats.auth.providers" (include "agentrt.natsProviderUsers" .) }}
{{- if not .Values.nats.auth.sharedProviderUser }}
{{- $conf = regexReplaceAll "(?s)\n    # agentrt: the shared provider user [^\n]*\n.*?\n    # agentrt: end of the shared provider user" $conf "" }}
{{- end }}
{{ $conf }}
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
