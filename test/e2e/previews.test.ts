// Reply previews on the live lane, whole system: while the model streams a codemode reply
// through the driver, the reducer publishes the prose and the script apart (`render/*-delta`,
// ephemeral), in order, and none of it is stored. What the web UI's chat shows as it streams.
import type { AgentEvent } from "@agentrt/contract";
import { LIVE_TYPES_HEADER } from "@agentrt/streams/jetstream";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type System, startSystem } from "../support/system.ts";
import { createBareAgent, say, waitForAssistant } from "../support/turns.ts";

const PROSE = "Let me count the open pull requests.";
const CODE = 'async (itx) => (await itx.repo.listPulls({ state: "open" })).length';
const REPLY = `${PROSE}\n\n\`\`\`ts\n${CODE}\n\`\`\``;

let system: System;
beforeAll(async () => {
  // Paced so the reply streams for about a second: several chunk flushes, several previews.
  system = await startSystem({ reducers: 1, drivers: 1, model: { defaultReply: { text: REPLY, tokensPerSecond: 25 } } });
});
afterAll(async () => system?.stop());

it("streams the prose and the script of a reply apart, as the reducer's previews", { timeout: 60_000 }, async () => {
  const path = "/agents/previews/one";
  await createBareAgent(system.store, path);
  const watcher = system.store.subscribe(path, { fromOffset: 3, ephemeral: true });
  const seen: AgentEvent[] = [];
  const reading = (async () => {
    for await (const event of watcher) seen.push(event);
  })();
  await say(system.store, path, "How many open pull requests are there?");
  const assistant = await waitForAssistant(system.store, path, PROSE, 30_000).catch((error: unknown) => {
    process.stdout.write(system.processes.logs() + "\n");
    throw error;
  });
  const requestOffset = (assistant.payload as { llmRequestOffset?: number }).llmRequestOffset;
  expect(requestOffset).toBeGreaterThan(0);
  await new Promise((resolve) => setTimeout(resolve, 200));
  await watcher.close();
  await reading;

  const previews = seen.filter((e) => e.type === "render/message-delta" || e.type === "render/script-delta");
  const joined = (type: string, field: "text" | "code") =>
    previews.filter((e) => e.type === type).map((e) => String((e.payload as unknown as Record<string, unknown>)[field])).join("");
  expect(joined("render/message-delta", "text")).toBe(PROSE);
  expect(joined("render/script-delta", "code")).toBe(CODE);
  // Several previews, not one at the end: the script was shown while it was being written.
  expect(previews.filter((e) => e.type === "render/script-delta").length).toBeGreaterThan(1);
  expect(previews.every((e) => e.ephemeral === true && (e.payload as { llmRequestOffset: number }).llmRequestOffset === requestOffset)).toBe(true);
  expect((await system.store.read(path)).some((e) => e.type.startsWith("render/"))).toBe(false);
});

/** How many messages nats-server has delivered to each of the reducer's subscriptions, by subject. */
async function deliveredToReducer(): Promise<Map<string, number>> {
  const response = await fetch(`http://127.0.0.1:${system.nats?.monitorPort}/connz?subs=detail&limit=1000`);
  const connz = (await response.json()) as { connections: { name?: string; subscriptions_list_detail?: { subject: string; msgs: number }[] }[] };
  const reducer = connz.connections.filter((c) => c.name === "agent-reducer");
  expect(reducer).toHaveLength(1);
  return new Map((reducer[0]?.subscriptions_list_detail ?? []).map((s) => [s.subject, s.msgs]));
}

it("sends the reducer the driver's chunks on the live lane, not its own previews and runtime changes back", { timeout: 60_000 }, async () => {
  const path = "/agents/previews/echo";
  await createBareAgent(system.store, path);
  // Everything on this agent's live lane, by the types its header names.
  const spy = await connect({ servers: system.natsUrl });
  const byType = new Map<string, number>();
  const lane = spy.subscribe(system.store.liveSubjectOf(path), {
    callback: (_error, msg) => {
      const types = msg.headers?.get(LIVE_TYPES_HEADER) ?? "";
      byType.set(types, (byType.get(types) ?? 0) + 1);
    },
  });
  await spy.flush();
  const before = await deliveredToReducer();
  await say(system.store, path, "How many open pull requests are there?");
  await waitForAssistant(system.store, path, PROSE, 30_000);
  await new Promise((resolve) => setTimeout(resolve, 300));
  lane.unsubscribe();
  await spy.close();
  const after = await deliveredToReducer();

  const chunks = byType.get("agent/llm-response-chunks") ?? 0;
  // The turn published the reducer's own live events too (else the count below proves nothing).
  expect([...byType.keys()].filter((types) => types !== "agent/llm-response-chunks").length).toBeGreaterThan(0);
  expect(chunks).toBeGreaterThan(1);
  // The reducer's subscription that covers this agent's lane (it follows whole partitions).
  const subject = [...after.keys()].find((filter) => subjectMatches(filter, system.store.liveSubjectOf(path)));
  if (subject === undefined) throw new Error(`no subscription of the reducer covers ${system.store.liveSubjectOf(path)}: ${[...after.keys()].join(", ")}`);
  expect((after.get(subject) ?? 0) - (before.get(subject) ?? 0)).toBe(chunks);
});

/** Whether a NATS subscription subject (`*` one token, `>` the rest) covers a subject. */
function subjectMatches(filter: string, subject: string): boolean {
  const want = filter.split(".");
  const have = subject.split(".");
  for (let i = 0; i < want.length; i++) {
    if (want[i] === ">") return have.length > i;
    if (i >= have.length || (want[i] !== "*" && want[i] !== have[i])) return false;
  }
  return want.length === have.length;
}
