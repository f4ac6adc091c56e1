// A worker in its own process that claims work items (with work claims) and never finishes
// them, for tests that SIGKILL or SIGSTOP it: prints one JSON line when ready and one per item.
//   node --import tsx work-claimant.ts <natsUrl> <durable> <owner> <ackWaitMs> <heartbeatMs>

import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { consumeWork, createLogger, startWorkClaims } from "../../src/index.ts";

const [url, durable, owner, ackWaitMs, heartbeatMs] = process.argv.slice(2) as [string, string, string, string, string];
const nc = await connect({ servers: url });
const logger = createLogger("work-claimant", "silent");
const say = (line: object): void => void process.stdout.write(`${JSON.stringify(line)}\n`);
const claims = await startWorkClaims({ nc, kind: "llm", owner, logger });
await consumeWork(jetstream(nc), await jetstreamManager(nc), {
  kind: "llm",
  durable,
  logger,
  claims,
  ackWaitMs: Number(ackWaitMs),
  heartbeatMs: Number(heartbeatMs),
  handler: (item) => {
    say({ claimed: item });
    return new Promise(() => undefined);
  },
});
say({ ready: true });
