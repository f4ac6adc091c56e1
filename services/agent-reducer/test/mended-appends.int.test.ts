// What the reducer writes is made of text it did not write: a reply's script and status, a
// driver's partial text, records stored before the contract refused lone surrogates. The store
// refuses a lone surrogate from any writer, so the reducer's effects mend them (to U+FFFD, as a
// UTF-8 decoder would) instead of having a reaction refused, on a real nats-server.

import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { jetstreamManager } from "@nats-io/jetstream";
import { JetStreamEventStore, JetStreamPublisher } from "@agentrt/streams/jetstream";
import { createLogger, ensureWorkStreams } from "@agentrt/service-kit";
import { type NatsServer, startNatsServer } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { natsReducerEffects } from "../src/effects.ts";

let server: NatsServer;
let nc: NatsConnection;
let store: JetStreamEventStore;
let effects: ReturnType<typeof natsReducerEffects>;

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  await ensureWorkStreams(await jetstreamManager(nc));
  store = await JetStreamEventStore.open(nc, { partitionCount: 4 });
  effects = natsReducerEffects({ store, nc, workPublisher: new JetStreamPublisher(nc, 5_000), logger: createLogger("test", "silent"), interruptTimeoutMs: 200 });
});

afterAll(async () => {
  await store?.close();
  await nc?.close();
  await server?.stop();
});

describe("the reducer's appends of text it did not write", () => {
  it("given lone surrogates in a reaction, an append at the head and a preview, when appended, then each is stored mended", async () => {
    const path = "/agents/test/mended";
    const [created] = (await effects.append(path, [{ type: "agent/created", payload: {} }])).events;
    const reaction = await effects.append(path, [{ type: "agent/summary-updated", payload: { activity: "half \ud83d" } }]);
    expect(reaction.events[0]?.payload).toEqual({ activity: "half \ufffd" });
    const atHead = await effects.appendAtHead(path, [{ type: "agents/context-added", payload: { role: "developer", content: "\udc00 left" } }], (created?.offset ?? 0) + 1);
    expect(atHead.status).toBe("committed");
    expect(atHead.events[0]?.payload).toMatchObject({ content: "\ufffd left" });

    const live = store.subscribe(path, { fromOffset: 1, ephemeral: true });
    await effects.publishPreviews(path, [{ type: "render/message-delta", payload: { llmRequestOffset: 2, text: "x\ud800" } }], 3);
    for await (const event of live) {
      if (event.type !== "render/message-delta") continue;
      expect(event.payload).toEqual({ llmRequestOffset: 2, text: "x\ufffd" });
      break;
    }
    await live.close();
  });
});
