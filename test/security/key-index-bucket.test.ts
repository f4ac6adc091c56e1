// The key index's bucket (AGENT_EVENTS_KEYS) is written by every service's NATS user: they
// reserve idempotency keys there. With the gateway's user only (red-team of 2026-12-07):
// - reserving an agent's next settlement keys far ahead of its stream had every settlement
//   refused ("Too many concurrent writers"), the model asked again and again, and not even the
//   reducer's expiry settled the request: now the agent answers its turn once, one model call;
// - emptying the `epoch` entry had every service that restarted hang in its store's open: now a
//   restarted driver is ready, and the agent's next turn is answered.

import { createHash } from "node:crypto";
import { streamPathSegments } from "@agentrt/contract";
import { jetstream } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createBareAgent, say, waitForAssistant } from "../support/turns.ts";
import { startNatsUsersSystem, type NatsUsersSystem } from "./support/nats-users-system.ts";

const BUCKET = "AGENT_EVENTS_KEYS";
let system: NatsUsersSystem;
beforeAll(async () => {
  system = await startNatsUsersSystem({ model: { defaultReply: { text: "The model's answer." } } });
});
afterAll(async () => system?.stop());

/** The entry of `key` on `path` in the key index (key-index.ts: `k.<segments>.<sha256(key)>`). */
const entryOf = (path: string, key: string) => `$KV.${BUCKET}.k.${streamPathSegments(path).join(".")}.${createHash("sha256").update(key).digest("hex")}`;

describe("the key index bucket, written with the gateway's NATS user", () => {
  it("settlement keys reserved far ahead of the stream: the agent's turn is answered once, with one model call", async () => {
    const path = "/agents/keys/squatted";
    await createBareAgent(system.store, path);
    const last = await system.store.lastOffset(path);
    const gateway = await system.connectAs("web-gateway");
    try {
      for (let offset = last + 1; offset <= last + 20; offset++) {
        await jetstream(gateway).publish(entryOf(path, `agent/settle/${offset}`), JSON.stringify({ first: 999_999_999 }));
      }
    } finally {
      await gateway.close();
    }
    const modelCalls = system.model.requests.length;
    await say(system.store, path, "hello?");
    await waitForAssistant(system.store, path, "The model's answer.", 30_000);
    const events = await system.store.read(path);
    expect(events.filter((e) => e.type === "agent/llm-request-settled").map((e) => e.payload.result.status)).toEqual(["succeeded"]);
    expect(system.model.requests.length - modelCalls).toBe(1);
  });

  it("an emptied epoch entry: a driver that restarts is ready, and answers the next turn", async () => {
    const gateway = await system.connectAs("web-gateway");
    try {
      await jetstream(gateway).publish(`$KV.${BUCKET}.epoch`, "");
    } finally {
      await gateway.close();
    }
    const [driver] = system.processes.byService("llm-driver");
    if (driver === undefined) throw new Error("no llm-driver process");
    await driver.signal("SIGTERM");
    driver.start();
    await driver.waitReady(30_000);
    const path = "/agents/keys/after-epoch";
    await createBareAgent(system.store, path);
    await say(system.store, path, "still there?");
    await waitForAssistant(system.store, path, "The model's answer.", 30_000);
  });
});
