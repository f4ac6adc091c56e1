// Writes the Helm chart's NATS authorization block (deploy/helm/agentrt/files/nats-authorization.conf)
// from the one source of the permission lists. test/helm/nats-auth.test.ts fails when it is stale.
//   pnpm exec tsx packages/service-kit/scripts/nats-authorization.ts --write

import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { chartNatsAuthorization, chartProviderUsersTemplate } from "../src/nats-permissions.ts";

export const CHART_AUTHORIZATION_FILE = fileURLToPath(new URL("../../../deploy/helm/agentrt/files/nats-authorization.conf", import.meta.url));
/** The chart's template of the users of nats.auth.providers. */
export const CHART_PROVIDER_USERS_FILE = fileURLToPath(new URL("../../../deploy/helm/agentrt/templates/nats/_provider-users.tpl", import.meta.url));

if (process.argv.includes("--write")) {
  writeFileSync(CHART_AUTHORIZATION_FILE, chartNatsAuthorization());
  writeFileSync(CHART_PROVIDER_USERS_FILE, chartProviderUsersTemplate());
  process.stdout.write(`wrote ${CHART_AUTHORIZATION_FILE} and ${CHART_PROVIDER_USERS_FILE}\n`);
}
