// Writes the Helm chart's NATS authorization block (deploy/helm/agentrt/files/nats-authorization.conf)
// from the one source of the permission lists. test/helm/nats-auth.test.ts fails when it is stale.
//   pnpm exec tsx packages/service-kit/scripts/nats-authorization.ts --write
// For an external NATS, prints the block with a user per capability provider (passwords are
// $AGENTRT_NATS_PASSWORD_<USER> variables the server reads from its environment):
//   pnpm exec tsx packages/service-kit/scripts/nats-authorization.ts --provider provider-repo=repo [--provider …]

import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { chartNatsAuthorization, chartProviderUsersTemplate, type ProviderUser } from "../src/nats-permissions.ts";

export const CHART_AUTHORIZATION_FILE = fileURLToPath(new URL("../../../deploy/helm/agentrt/files/nats-authorization.conf", import.meta.url));
/** The chart's template of the users of nats.auth.providers. */
export const CHART_PROVIDER_USERS_FILE = fileURLToPath(new URL("../../../deploy/helm/agentrt/templates/nats/_provider-users.tpl", import.meta.url));

/** `--provider <user>=<namespace>[,<namespace>…]`, each as a provider user (checked when rendered). */
export function providersOfArgs(argv: readonly string[]): ProviderUser[] {
  const providers: ProviderUser[] = [];
  argv.forEach((arg, i) => {
    if (arg !== "--provider") return;
    const value = argv[i + 1] ?? "";
    const at = value.indexOf("=");
    if (at < 1) throw new Error(`--provider: "${value}" must be <user>=<namespace>[,<namespace>…], e.g. provider-repo=repo`);
    providers.push({ user: value.slice(0, at), namespaces: value.slice(at + 1).split(",").filter((ns) => ns !== "") });
  });
  return providers;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv.includes("--write")) {
    writeFileSync(CHART_AUTHORIZATION_FILE, chartNatsAuthorization());
    writeFileSync(CHART_PROVIDER_USERS_FILE, chartProviderUsersTemplate());
    process.stdout.write(`wrote ${CHART_AUTHORIZATION_FILE} and ${CHART_PROVIDER_USERS_FILE}\n`);
  } else if (process.argv.includes("--provider")) {
    try {
      process.stdout.write(chartNatsAuthorization(providersOfArgs(process.argv.slice(2))));
    } catch (error) {
      process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = 2;
    }
  }
}
