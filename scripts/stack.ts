// The quickstart supervisor: `./scripts/up.sh` runs this. It uses the configured NATS
// (NATS_URL) when one answers, otherwise launches a local nats-server (stack/nats.ts); then
// starts the services in dependency order, waits for each one's /readyz, prints the web UI's
// URL and streams their logs. A child that exits unexpectedly is restarted with backoff;
// Ctrl-C or SIGTERM stops everything, dependents first.
//
// Ports: HTTP_PORT, GRPC_PORT, REDUCER_OPS_PORT, DRIVER_OPS_PORT, HOST_OPS_PORT,
// GATEWAY_OPS_PORT (stack/services.ts). With no OPENAI_API_KEY / LLM_PROVIDERS the driver
// answers with the built-in offline model.

import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { writeEventKeys } from "../packages/service-kit/src/event-signing.ts";
import { planNats } from "./stack/nats.ts";
import { log } from "./stack/output.ts";
import { portsFromEnv, stackChildren } from "./stack/services.ts";
import { Supervisor } from "./stack/supervisor.ts";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const startedAt = Date.now();
const supervisor = new Supervisor(root, process.env);

let exiting = false;
async function shutdown(code: number, why: string): Promise<void> {
  if (exiting) return;
  exiting = true;
  log(`${why}: stopping the stack`);
  await supervisor.stop();
  log("stopped");
  process.exit(code);
}
process.on("SIGINT", () => void shutdown(0, "SIGINT"));
process.on("SIGTERM", () => void shutdown(0, "SIGTERM"));

async function main(): Promise<void> {
  const ports = portsFromEnv(process.env);
  const nats = await planNats(root, process.env);
  // Each service signs its records and reads only signed ones. The keys belong with the records:
  // beside the NATS data this stack keeps in .data (made once; records stored before stay
  // readable), or the directory EVENT_KEYS_DIR names. A NATS this stack did not start may hold
  // records another checkout signed with its own keys, which these would pass over: signing
  // stays off there unless EVENT_KEYS_DIR says which keys its records are signed with.
  const eventKeysDir = process.env.EVENT_KEYS_DIR ?? (nats.child === undefined ? undefined : join(root, ".data", "event-keys"));
  if (eventKeysDir === undefined) log("that NATS is not started by the quickstart, so its records' keys are not the quickstart's to make: services neither sign nor check records (set EVENT_KEYS_DIR to sign them; see docs/security.md)");
  else if (process.env.EVENT_KEYS_DIR === undefined && writeEventKeys(eventKeysDir)) log(`made the services' event keys in ${eventKeysDir}`);
  const children = stackChildren({ root, env: process.env, natsUrl: nats.url, natsChild: nats.child?.name, ports, serviceEnv: nats.serviceEnv, eventKeysDir });
  await supervisor.start(nats.child === undefined ? children : [nats.child, ...children]);
  if (exiting) return;
  const model = process.env.OPENAI_API_KEY || process.env.LLM_PROVIDERS ? "your configured provider" : "the built-in OFFLINE model (set OPENAI_API_KEY for a real one)";
  const seconds = ((Date.now() - startedAt) / 1000).toFixed(2);
  log(`ready in ${seconds} s: open http://127.0.0.1:${ports.http}/  — agents answer with ${model}. Ctrl-C stops everything.`);
}

main().catch((error: unknown) => void shutdown(1, `failed: ${error instanceof Error ? error.message : String(error)}`));
