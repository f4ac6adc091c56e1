// The script lifecycle on a real nats-server: round trip, typecheck blocking, runtime errors,
// deadlines (and the host serving on), preamble scope, and the itx built-ins.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jetstream } from "@nats-io/jetstream";
import { publishWork } from "@agentrt/service-kit";
import { waitFor } from "@agentrt/testing";
import { eventsOf, type HostFixture, requestScript, settlementOf, startFixture, uniquePath, waitSettled } from "./harness.ts";

let fx: HostFixture;
beforeAll(async () => {
  fx = await startFixture({ host: { limits: { maxRunMs: 4_000 } } });
});
afterAll(async () => fx?.stop());

describe("capability host: script lifecycle", () => {
  it("waits for a script it is still running when that script's work item is delivered again", async () => {
    const path = uniquePath("redelivered");
    // Awaits often, so the host's event loop serves the second delivery while this runs.
    const code = 'const end = Date.now() + 1500;\nwhile (Date.now() < end) { await itx.streams.get(itx.agent.path).read({ fromOffset: 1, limit: 1 }); }\nreturn "done";';
    const { executionId, requestedOffset } = await requestScript(fx, path, code);
    await waitFor(async () => (await eventsOf(fx.store, path, "capability-host/script-run-started")).length === 1, { timeoutMs: 20_000 });
    // The claim lapsed (say a long synchronous stretch blocked the heartbeats): the same
    // item arrives again while the script is running here.
    await publishWork(jetstream(fx.nc), "script", fx.store.partitionOf(path), { streamPath: path, requestedOffset, executionId }, { redrive: true });
    expect((await waitSettled(fx.store, path, executionId)).payload.settlement).toEqual({ status: "succeeded", result: "done" });
    expect(await eventsOf(fx.store, path, "capability-host/script-run-settled")).toHaveLength(1);
  });

  it("runs a script round trip: started before the body, settled with its JSON result", async () => {
    const path = uniquePath("roundtrip");
    const { executionId } = await requestScript(fx, path, "return { sum: 1 + 2, list: [1, 'a', null] };");
    const settled = await waitSettled(fx.store, path, executionId);
    expect(settled.payload.settlement).toEqual({ status: "succeeded", result: { sum: 3, list: [1, "a", null] } });
    expect(settled.idempotencyKey).toBe(`capability-host/script-run-settled@${executionId}`);
    const started = await eventsOf(fx.store, path, "capability-host/script-run-started");
    expect(started).toHaveLength(1);
    expect(started[0]!.idempotencyKey).toBe(`capability-host/script-run-started@${executionId}`);
    expect(started[0]!.offset).toBeLessThan(settled.offset);
  });

  it("blocks a typo on a known namespace (itx.chat.sendMesage) with 'Did you mean' and appends no started event", async () => {
    const path = uniquePath("typo");
    const { executionId } = await requestScript(fx, path, 'await itx.chat.sendMesage("hi");');
    const settled = await waitSettled(fx.store, path, executionId);
    const s = settled.payload.settlement;
    expect(s).toMatchObject({ status: "failed", failureKind: "typecheck", phase: "typecheck", executionMayHaveOccurred: false, cancellation: "not-applicable" });
    if (s.status !== "failed") throw new Error("expected a failure");
    expect(s.error).toBe(
      "Script was NOT executed: it does not typecheck against this scope's capability types.\n" +
        "Line 1, column 16: error TS2551: Property 'sendMesage' does not exist on type 'ItxChat'. Did you mean 'sendMessage'?\n" +
        "Fix the type errors and resend the whole corrected script.",
    );
    expect(await eventsOf(fx.store, path, "capability-host/script-run-started")).toHaveLength(0);
    expect(await eventsOf(fx.store, path, "agents/web-message-sent")).toHaveLength(0);
  });

  it("runs an unknown root namespace unchecked (providers extend itx at run time) and fails at run time naming it", async () => {
    const path = uniquePath("unknown-ns");
    const { executionId } = await requestScript(fx, path, "return await itx.unknownNs.doThing(1);");
    const s = (await waitSettled(fx.store, path, executionId)).payload.settlement;
    expect(s).toMatchObject({ status: "failed", failureKind: "runtime", phase: "execution" });
    if (s.status === "failed") expect(s.error).toContain('no capability provider registered the namespace "unknownNs"');
    expect(await eventsOf(fx.store, path, "capability-host/script-run-started")).toHaveLength(1);
  });

  it("settles a thrown error as runtime", async () => {
    const path = uniquePath("throws");
    expect(await settlementOf(fx, path, 'throw new RangeError("out of cheese");')).toEqual({
      status: "failed",
      error: "RangeError: out of cheese",
      failureKind: "runtime",
      phase: "execution",
      executionMayHaveOccurred: true,
      cancellation: "not-applicable",
    });
  });

  it("stops while(true){} at the deadline, settles deadline, and keeps serving the next script", async () => {
    const path = uniquePath("loop");
    const loop = await requestScript(fx, path, "while (true) {}");
    const next = await requestScript(fx, path, "return 'still serving';");
    const s = (await waitSettled(fx.store, path, loop.executionId)).payload.settlement;
    expect(s).toMatchObject({ status: "failed", failureKind: "deadline", phase: "execution", executionMayHaveOccurred: true });
    expect((await waitSettled(fx.store, path, next.executionId)).payload.settlement).toEqual({ status: "succeeded", result: "still serving" });
  });

  it("uses expiresAt − 15 s as the deadline: a request expiring within 15 s never starts", async () => {
    const path = uniquePath("short-expiry");
    expect(await settlementOf(fx, path, "return 1;", { expiresInMs: 10_000 })).toMatchObject({
      status: "failed",
      failureKind: "deadline",
      phase: "before-execution",
      executionMayHaveOccurred: false,
    });
    expect(await eventsOf(fx.store, path, "capability-host/script-run-started")).toHaveLength(0);
  });

  it("settles an unstarted request past expiresAt as expired (before-execution)", async () => {
    const path = uniquePath("expired");
    expect(await settlementOf(fx, path, "return 1;", { expiresInMs: -1_000 })).toMatchObject({
      status: "failed",
      failureKind: "expired",
      phase: "before-execution",
      executionMayHaveOccurred: false,
      cancellation: "not-applicable",
    });
  });

  it("puts a preamble constant in scope at typecheck and execution, and prior results in `results`", async () => {
    const path = uniquePath("preamble");
    await fx.store.append(path, [{ type: "agent/created", payload: {}, idempotencyKey: "agent/created" }]);
    await fx.store.append(path, [{ type: "capability-host/preamble-set", payload: { key: "team", code: 'const teamName = "platform";\nconst double = (n: number) => n * 2;' } }]);
    const first = await requestScript(fx, path, "return double(21);");
    expect((await waitSettled(fx.store, path, first.executionId)).payload.settlement).toEqual({ status: "succeeded", result: 42 });
    const second = await requestScript(fx, path, 'return `${teamName}:${results[0].status === "succeeded" && "data" in results[0] ? results[0].data : "none"}`;');
    expect((await waitSettled(fx.store, path, second.executionId)).payload.settlement).toEqual({ status: "succeeded", result: "platform:42" });
    // A misspelt preamble name is provably wrong: the checker suggests the preamble's name.
    const typo = await requestScript(fx, path, "return teamNane;");
    const s = (await waitSettled(fx.store, path, typo.executionId)).payload.settlement;
    expect(s.status === "failed" && s.error).toContain("Cannot find name 'teamNane'. Did you mean 'teamName'?");
  });

  it("serves the itx built-ins: chat, agent.append, streams, kv, files, agents, getScriptResult, docs", async () => {
    const path = uniquePath("builtins");
    const child = `${path}/helper`;
    const code = [
      'await itx.chat.sendMessage("hello from a script");',
      'await itx.agent.append({ type: "events.iterate.com/agent/summary-updated", payload: { title: "Testing itx" } });',
      'const first = await itx.streams.get(itx.agent.path).getEvent({ offset: 1 });',
      'await itx.kv.set("counter", { n: 3 });',
      'const kv = await itx.kv.get("counter");',
      'const keys = await itx.kv.list();',
      'await itx.files.write("notes/a.md", "# hi");',
      'const text = await itx.files.get("notes/a.md").text();',
      'const listed = await itx.files.list("notes/");',
      'const created = await itx.agents.get("helper").create();',
      'await itx.agents.get("helper").message("please help");',
      'const docs = await itx.docs.search({ q: "send chat message" });',
      'const tc = await itx.docs.typecheck({ code: "await itx.chat.sendMesage(1)" });',
      "return { firstType: first?.type, kv, keys, text, listed, created, docsFound: docs.length > 0, tcOk: tc.ok, tcProblem: tc.problems[0] };",
    ].join("\n");
    const { executionId } = await requestScript(fx, path, code);
    const s = (await waitSettled(fx.store, path, executionId)).payload.settlement;
    expect(s.status).toBe("succeeded");
    if (s.status !== "succeeded") return;
    expect(s.result).toMatchObject({
      firstType: "agent/created",
      kv: { n: 3 },
      keys: ["counter"],
      text: "# hi",
      listed: [{ path: "notes/a.md", size: 4 }],
      created: { path: child, created: true },
      docsFound: true,
      tcOk: false,
    });
    expect((s.result as { tcProblem: string }).tcProblem).toContain("Did you mean 'sendMessage'?");
    const sent = await eventsOf(fx.store, path, "agents/web-message-sent");
    expect(sent.map((e) => e.payload)).toEqual([{ message: "hello from a script" }]);
    expect((await eventsOf(fx.store, path, "agent/summary-updated")).map((e) => e.payload)).toEqual([{ title: "Testing itx" }]);
    const childEvents = await fx.store.read(child);
    expect(childEvents.map((e) => e.type)).toEqual(["agent/created", "agents/context-added"]);
    expect(childEvents[1]!.payload).toEqual({ role: "developer", content: "please help", actor: { type: "agent", path } });
    // The result of an earlier script reads back by id.
    const again = await requestScript(fx, path, `return await itx.capabilityHost.getScriptResult(${JSON.stringify(executionId)});`);
    const back = (await waitSettled(fx.store, path, again.executionId)).payload.settlement;
    expect(back.status === "succeeded" && (back.result as { status: string }).status).toBe("succeeded");
  });

  it("refuses a value nested deeper than 64 levels handed to an itx call at once, where it used to hang the script until its deadline", async () => {
    const path = uniquePath("deep-args");
    const code = 'const v = JSON.parse("[".repeat(6000) + "]".repeat(6000)); try { await itx.kv.set("k", v); return "set"; } catch (e) { return String(e); }';
    expect(await settlementOf(fx, path, code)).toEqual({
      status: "succeeded",
      result: "RangeError: itx kv.set: its arguments nest deeper than 64 levels of arrays and objects; pass flatter values.",
    });
    // 64 levels still pass.
    const fine = await requestScript(fx, path, 'await itx.kv.set("k", JSON.parse("[".repeat(64) + "]".repeat(64))); return "set";');
    expect((await waitSettled(fx.store, path, fine.executionId)).payload.settlement).toEqual({ status: "succeeded", result: "set" });
  });

  it("answers a script that reads a stored event nested 3 000 deep: the bound is on what scripts hand in, not on what they read", async () => {
    const path = uniquePath("deep-answer");
    const deep = JSON.parse(`${"[".repeat(3000)}${"]".repeat(3000)}`) as unknown;
    await fx.store.append(path, [{ type: "agent/created", payload: {} }, { type: "agents/context-added", payload: { role: "user", content: "x", mentionResolution: deep } }]);
    const code = 'try { const events = await itx.streams.get(itx.agent.path).read({ fromOffset: 2, limit: 1 }); return events.length; } catch (e) { return "refused"; }';
    expect(await settlementOf(fx, path, code)).toEqual({ status: "succeeded", result: 1 });
  });

  it("writes and reads a file's bytes back exactly, every byte value, every length modulo 3 and across the encoder's chunks (bytes cross as base64 both ways)", async () => {
    const path = uniquePath("bytes");
    const code = [
      "const out: boolean[] = [];",
      "for (const length of [0, 1, 2, 3, 4, 5, 256, 1000, 49151, 49152, 49153, 98306]) {",
      "  const bytes = new Uint8Array(length);",
      "  for (let i = 0; i < length; i++) bytes[i] = (i * 7 + 255) % 256;",
      "  await itx.files.write(`b${length}.bin`, bytes);",
      "  const back = await itx.files.get(`b${length}.bin`).bytes();",
      "  out.push(back instanceof Uint8Array && back.length === length && back.every((b, i) => b === bytes[i]));",
      "}",
      "return out;",
    ].join("\n");
    expect(await settlementOf(fx, path, code)).toEqual({ status: "succeeded", result: [true, true, true, true, true, true, true, true, true, true, true, true] });
  });

  it("refuses a stream read from an offset that is not a positive integer (Infinity crosses as null), where it read from offset 1", async () => {
    const path = uniquePath("read-args");
    const code = [
      "const out: string[] = [];",
      "for (const args of [{ fromOffset: Infinity }, { fromOffset: 0 }, { fromOffset: 1.5 }, { limit: -1 }]) {",
      "  try { await itx.streams.get(itx.agent.path).read(args); out.push(\"read\"); } catch (e) { out.push(String(e)); }",
      "}",
      "out.push(String((await itx.streams.get(itx.agent.path).read({ fromOffset: 1, limit: 1 })).length));",
      "return out;",
    ].join("\n");
    expect(await settlementOf(fx, path, code)).toEqual({
      status: "succeeded",
      result: [
        "ItxInputError: read({fromOffset}): fromOffset must be an integer ≥ 1, got null",
        "ItxInputError: read({fromOffset}): fromOffset must be an integer ≥ 1, got 0",
        "ItxInputError: read({fromOffset}): fromOffset must be an integer ≥ 1, got 1.5",
        "ItxInputError: read({limit}): limit must be an integer ≥ 1, got -1",
        "1",
      ],
    });
  });

  it("refuses machinery events from itx.agent.append", async () => {
    const path = uniquePath("forge");
    const code = 'await itx.agent.append({ type: "capability-host/script-run-settled", payload: { executionId: "x", settlement: { status: "succeeded" } } });';
    const { executionId } = await requestScript(fx, path, code);
    const s = (await waitSettled(fx.store, path, executionId)).payload.settlement;
    expect(s.status === "failed" && s.error).toContain('scripts may not append "capability-host/script-run-settled"');
  });

  it("refuses a script's idempotency key in a namespace reserved for the services (no squatting agent/settle/R)", async () => {
    const path = uniquePath("squat");
    const code = 'await itx.agent.append({ type: "agent/summary-updated", payload: { title: "squat" }, idempotencyKey: "agent/settle/3" });';
    const { executionId } = await requestScript(fx, path, code);
    const s = (await waitSettled(fx.store, path, executionId)).payload.settlement;
    expect(s.status === "failed" && s.error).toContain('namespace "agent/settle/" reserved for agent-reducer and llm-driver');
    expect((await fx.store.read(path)).some((e) => e.idempotencyKey === "agent/settle/3")).toBe(false);
  });

  it("spills a result too big for an event to the workspace and settles it as oversized; getScriptResult reads it back", async () => {
    const path = uniquePath("oversized");
    const big = await requestScript(fx, path, 'return Array.from({ length: 3000 }, (_, i) => ({ i, text: "x".repeat(100) }));');
    const s = (await waitSettled(fx.store, path, big.executionId)).payload.settlement;
    expect(s.status).toBe("succeeded");
    if (s.status !== "succeeded") return;
    expect(s.result).toBeUndefined();
    expect(s.oversized?.kind).toBe("omitted");
    expect(s.oversized!.typeText.replace(/\s+/g, " ")).toMatch(/^(Array<)?\{ i: number;? text: string;? \}(\[\]|>)$/);
    expect(s.oversized!.preview).toContain("more items");
    expect(s.oversized!.serializedChars).toBeGreaterThan(256_000);
    const spill = `script-results/${big.executionId.replace(/[^A-Za-z0-9._-]+/g, "-")}.json`;
    const back = await requestScript(
      fx,
      path,
      `const full = await itx.capabilityHost.getScriptResult(${JSON.stringify(big.executionId)}); const files = await itx.files.list("script-results/"); return { n: (full as any).result.length, last: (full as any).result[2999].i, files: files.map((f) => f.path) };`,
    );
    expect((await waitSettled(fx.store, path, back.executionId)).payload.settlement).toEqual({
      status: "succeeded",
      result: { n: 3000, last: 2999, files: [spill] },
    });
  });
});
