{{- /*
Generated from packages/service-kit/src/nats-permissions.ts by
  pnpm exec tsx packages/service-kit/scripts/nats-authorization.ts --write
Do not edit; test/helm/nats-auth.test.ts fails when it is stale. The NATS users of
nats.auth.providers, one per provider, as providerUserPermissions grants them.
*/ -}}
{{- define "agentrt.natsProviderUsers" -}}
{{- range $p := .Values.nats.auth.providers }}
    {
      user: "provider-{{ $p.name }}"
      password: $AGENTRT_NATS_PASSWORD_{{ printf "provider-%s" $p.name | upper | replace "-" "_" }}
      permissions: {
        publish: { allow: [
{{- range $ns := $p.namespaces }}
          "agentrt.capabilities.register.{{ $ns }}"
          "agentrt.capabilities.revoke.{{ $ns }}"
{{- end }}
        ] }
        subscribe: { allow: [
          "_INBOX_provider-{{ $p.name }}.>"
{{- range $ns := $p.namespaces }}
          "agentrt.capabilities.call.{{ $ns }}"
{{- end }}
          "agentrt.capabilities.alive.>"
        ] }
        allow_responses: { max: 2 }
      }
    }
{{- end }}
{{- end }}
