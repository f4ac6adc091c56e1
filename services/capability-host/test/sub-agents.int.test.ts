// Sub-agents from a script: `itx.agents.get(name).create()` commits the project worker's birth
// batch (from the project's tagged prompt file) atomically and once; `.message(text)` lands
// as developer context with actor {type: "agent", path: <caller>}, only to an agent that exists.

import { afterAll, beforeAll, expect, it } from "vitest";
import { type HostFixture, requestScript, settlementOf, startFixture, uniquePath, waitSettled } from "./harness.ts";
import { senderDigest } from "../src/itx/host-calls.ts";

let fx: HostFixture;
beforeAll(async () => {
  fx = await startFixture({
    host: {
      project: {
        promptFileText: '<section key="identity">\nYou are a research helper.\n</section>\n\n<section key="output-formatting">\nAnswer briefly.\n</section>\n',
        project: { name: "Demo", slug: "demo" },
        configRepo: "/repos/config",
      },
    },
  });
});
afterAll(async () => fx?.stop());

it("create() births the sub-agent with the project's batch once; message() is developer context from the caller", async () => {
  const path = uniquePath("parent");
  const child = `${path}/researcher`;
  const code = [
    'const first = await itx.agents.get("researcher").create();',
    'const again = await itx.agents.get("researcher").create();',
    'await itx.agents.get("researcher").message("Summarise the open PRs.");',
    "return { first, again };",
  ].join("\n");
  const { executionId } = await requestScript(fx, path, code);
  expect((await waitSettled(fx.store, path, executionId)).payload.settlement).toEqual({
    status: "succeeded",
    result: { first: { path: child, created: true }, again: { path: child, created: false } },
  });
  const events = await fx.store.read(child);
  expect(events.map((e) => [e.type, e.idempotencyKey])).toEqual([
    ["agent/created", "agent/birth/created"],
    ["agent/configured", "agent/birth/configured"],
    ["agents/context-added", "agent/birth/section/identity"],
    ["agents/context-added", "agent/birth/section/output-formatting"],
    ["agents/context-added", "agent/birth/boot-context"],
    ["agents/context-added", `capability-host/agent-message@${senderDigest(path)}:${executionId}#1`],
  ]);
  expect(events[2]!.payload).toMatchObject({ role: "system", key: "identity", content: "You are a research helper." });
  expect(events[5]!.payload).toEqual({ role: "developer", content: "Summarise the open PRs.", actor: { type: "agent", path } });
});

it("two agents message one board from runs with the same id: both messages land, neither squats the other's key", async () => {
  const board = uniquePath("board");
  const [p1, p2] = [uniquePath("sender"), uniquePath("sender")];
  // The board is an agent (a message to a path with no agent is refused: the test below).
  await fx.store.append(board, [{ type: "agent/created", payload: {} }]);
  for (const sender of [p1, p2]) {
    // Each sender may append to the board (its grant, as a key with that scope gives it).
    await fx.store.append(sender, [{ type: "agent/created", payload: { grant: [{ prefix: board, verbs: ["append"] }] } }]);
    const message = `await itx.agents.get(${JSON.stringify(board)}).message(${JSON.stringify(`from ${sender}`)}); return "sent";`;
    expect(await settlementOf(fx, sender, message, { executionId: "job-1" })).toEqual({ status: "succeeded", result: "sent" });
  }
  const messages = (await fx.store.read(board)).flatMap((e) => (e.type === "agents/context-added" ? [e.payload.content] : []));
  expect(messages).toEqual([`from ${p1}`, `from ${p2}`]);
});

it("a sub-agent may message its creator and nothing beside it: not a sibling, not a new agent under its creator", async () => {
  // Given a parent that created two sub-agents
  const parent = uniquePath("family");
  const created = await settlementOf(fx, parent, 'await itx.agents.get("b").create(); await itx.agents.get("c").create(); return "born";');
  expect(created).toEqual({ status: "succeeded", result: "born" });
  expect((await fx.store.read(`${parent}/b`))[0]).toMatchObject({ type: "agent/created", payload: { grant: [{ prefix: parent, verbs: ["append"], exact: true }] } });
  // When sub-agent b messages its creator, its sibling, and creates an agent beside itself
  const probe = [
    "const attempt = async (f: () => Promise<unknown>) => { try { await f(); return \"ok\"; } catch (e) { return e instanceof Error ? e.message : String(e); } };",
    `return { creator: await attempt(() => itx.agents.get("${parent}").message("done")), sibling: await attempt(() => itx.agents.get("${parent}/c").message("hi c")), beside: await attempt(() => itx.agents.get("${parent}/evil").create()) };`,
  ].join("\n");
  const result = await settlementOf(fx, `${parent}/b`, probe);
  // Then only the creator is reachable
  expect(result).toEqual({
    status: "succeeded",
    result: {
      creator: "ok",
      sibling: `itx.agents.get("${parent}/c").message(): ${parent}/c is outside this script's grant (append: ${parent}/b, ${parent} (only))`,
      beside: `itx.agents.get("${parent}/evil").create(): ${parent}/evil is outside this script's grant (append: ${parent}/b, ${parent} (only))`,
    },
  });
  expect(await fx.store.lastOffset(`${parent}/evil`)).toBe(0);
  expect((await fx.store.read(`${parent}/c`)).some((e) => e.type === "agents/context-added" && e.payload.content === "hi c")).toBe(false);
});

it("message() to a path with no agent is refused, naming the path and create(), and writes nothing; create() there still births it", async () => {
  // Given an agent and a path under it with no agent
  const path = uniquePath("early");
  const child = `${path}/later`;
  // When its script messages the path before creating it, then creates it
  const code = [
    'const refused = await itx.agents.get("later").message("are you there?").then(() => "sent", (e: unknown) => (e instanceof Error ? e.message : String(e)));',
    'const created = await itx.agents.get("later").create();',
    'await itx.agents.get("later").message("now you are");',
    "return { refused, created };",
  ].join("\n");
  // Then the message is refused with an error saying what to do, and the path is still free for its birth
  expect(await settlementOf(fx, path, code)).toEqual({
    status: "succeeded",
    result: {
      refused: `itx.agents.get("later").message(): no agent at ${child}; create it first with itx.agents.get("later").create()`,
      created: { path: child, created: true },
    },
  });
  const events = await fx.store.read(child);
  expect(events[0]).toMatchObject({ type: "agent/created" });
  expect(events.flatMap((e) => (e.type === "agents/context-added" && e.payload.role === "developer" ? [e.payload.content] : []))).toEqual(["now you are"]);
});
