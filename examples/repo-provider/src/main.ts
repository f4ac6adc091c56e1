// The repo provider as its own process: REPO_DIR (a git work tree), PULLS_DIR (pull-request
// JSON records), NATS_URL. Registers `itx.repo` with the capability hosts and serves calls
// until SIGTERM, when it revokes its registration and drains.

import { startCapabilityProvider } from "@agentrt/capability-sdk";
import { connect } from "@nats-io/transport-node";
import { z } from "zod";
import { repoProvider } from "./repo-provider.ts";

const env = z
  .object({
    NATS_URL: z.string().min(1).default("nats://127.0.0.1:4222"),
    // The provider's own NATS user (the `capability-provider` permissions), when NATS has users.
    NATS_USER: z.string().min(1).optional(),
    NATS_PASSWORD: z.string().optional(),
    REPO_DIR: z.string().min(1, "REPO_DIR must name a git work tree"),
    PULLS_DIR: z.string().min(1, "PULLS_DIR must name a folder of pull-request JSON records"),
  })
  .parse(process.env);

const nc = await connect({
  servers: env.NATS_URL,
  name: "repo-provider",
  ...(env.NATS_USER === undefined ? {} : { user: env.NATS_USER, pass: env.NATS_PASSWORD ?? "" }),
});
const provider = await startCapabilityProvider(nc, {
  ...repoProvider({ repoDir: env.REPO_DIR, pullsDir: env.PULLS_DIR }),
  onError: (error) => process.stderr.write(`repo-provider: ${String(error)}\n`),
});
process.stdout.write(`repo-provider ready ${provider.instanceId}\n`);

const stop = async (): Promise<void> => {
  await provider.stop();
  await nc.drain();
  process.exit(0);
};
process.once("SIGTERM", () => void stop());
process.once("SIGINT", () => void stop());
