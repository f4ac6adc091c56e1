// The repo provider as its own process: REPO_DIR (a git work tree), PULLS_DIR (pull-request
// JSON records), NATS_URL. Registers `itx.repo` with the capability hosts and serves calls
// until SIGTERM, when it revokes its registration and drains. It may start before NATS or the
// host: the connection waits for NATS and the SDK keeps retrying the registration.

import { inboxPrefixOf, type RunningProvider, startCapabilityProvider } from "@agentrt/capability-sdk";
import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { z } from "zod";
import { repoProvider } from "./repo-provider.ts";

const env = z
  .object({
    NATS_URL: z.string().min(1).default("nats://127.0.0.1:4222"),
    // The provider's NATS user, when NATS has users: its own (`provider-repo`, bound to itx.repo),
    // or the shared `capability-provider`.
    NATS_USER: z.string().min(1).optional(),
    NATS_PASSWORD: z.string().min(1).optional(),
    REPO_DIR: z.string().min(1, "REPO_DIR must name a git work tree"),
    PULLS_DIR: z.string().min(1, "PULLS_DIR must name a folder of pull-request JSON records"),
  })
  .parse(process.env);

const stopping = new AbortController();
// What `stop` must undo, filled in as start-up gets that far (a signal may come at any point).
const running: { nc?: NatsConnection; provider?: RunningProvider } = {};
const stop = async (): Promise<void> => {
  stopping.abort();
  await running.provider?.stop();
  await running.nc?.drain();
  process.exit(0);
};
process.once("SIGTERM", () => void stop());
process.once("SIGINT", () => void stop());

// Not a top-level await: the bundle is CommonJS (scripts/bundling.ts).
async function main(): Promise<void> {
  const nc = await connect({
    servers: env.NATS_URL.split(",").map((s) => s.trim()),
    name: "repo-provider",
    // Replies come on the user's own inbox prefix (the only one it may read).
    ...(env.NATS_USER === undefined ? {} : { user: env.NATS_USER, pass: env.NATS_PASSWORD ?? "", inboxPrefix: inboxPrefixOf(env.NATS_USER) }),
    waitOnFirstConnect: true,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
  });
  running.nc = nc;
  try {
    const provider = await startCapabilityProvider(nc, {
      ...repoProvider({ repoDir: env.REPO_DIR, pullsDir: env.PULLS_DIR }),
      signal: stopping.signal,
      onError: (error) => process.stderr.write(`${JSON.stringify({ level: "error", provider: "repo", msg: String(error) })}\n`),
    });
    running.provider = provider;
    process.stdout.write(`repo-provider ready ${provider.instanceId}\n`);
  } catch (error) {
    // Stopped while still waiting for a host: `stop` exits. Anything else (the host refused the
    // registration) is a configuration error that retrying cannot fix.
    if (!stopping.signal.aborted) throw error;
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${JSON.stringify({ level: "fatal", provider: "repo", msg: String(error) })}\n`);
  process.exit(1);
});
