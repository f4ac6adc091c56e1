// What a script's itx calls may carry out of the sandbox. Arguments are copied out of QuickJS,
// whose heap cap then no longer counts them: 250 calls of a 16 MB string each, started at once,
// took the host to 4.5 GB. A call past MAX_CALL_ARGS_CHARS, and a call that would take the
// script's unanswered calls past MAX_PENDING_CALL_ARGS_CHARS, are refused before the copy, with
// an error the script can read; calls within the bounds still run.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ITX_FILE_MAX_BYTES } from "../src/itx/file-limits.ts";
import { MAX_CALL_ARGS_CHARS, MAX_JSON_NODES, MAX_PENDING_CALL_ARGS_CHARS, MAX_PENDING_CALL_NODES, maxCallArgsChars, SMALL_CALL_ARGS_CHARS } from "../src/sandbox/quickjs-sandbox.ts";
import { MAX_ITX_CALLS_IN_FLIGHT } from "../src/itx/in-flight.ts";
import { type HostFixture, requestScript, settlementOf, startFixture, uniquePath, waitSettled } from "./harness.ts";

let fx: HostFixture;
beforeAll(async () => {
  fx = await startFixture({});
});
afterAll(async () => fx?.stop());

/**
 * Starts `calls` copies of `call` at once in one script and expects the first `fit` to run and
 * every later one to be refused for the bound the unanswered calls share.
 */
async function expectRefusedPastFit(name: string, calls: number, fit: number, setup: string, call: string): Promise<void> {
  const settlement = await settlementOf(fx, uniquePath(name), [
    setup,
    `const outcomes = await Promise.allSettled(Array.from({ length: ${calls} }, () => ${call}));`,
    'return outcomes.map((o) => o.status === "fulfilled" ? "ran" : String(o.reason).includes("await some calls before starting more") ? "refused" : "failed: " + String(o.reason).slice(0, 200));',
  ]);
  expect(settlement.status).toBe("succeeded");
  const outcomes = settlement.status === "succeeded" ? (settlement.result as string[]) : [];
  expect(outcomes.filter((o) => o === "refused")).toHaveLength(calls - fit);
  expect(outcomes.slice(0, fit).every((o) => o !== "refused")).toBe(true);
}

describe("itx call arguments", () => {
  it("a call past the per-call bound is refused naming it, and the script goes on", { timeout: 60_000 }, async () => {
    const settlement = await settlementOf(fx, uniquePath("args-one"), [
      `const big = "x".repeat(${MAX_CALL_ARGS_CHARS + 1_000});`,
      "let refused = '';",
      'try { await itx.kv.set("big", big); } catch (e) { refused = String(e); }',
      'await itx.kv.set("small", 1);',
      'return { refused, small: await itx.kv.get("small") };',
    ]);
    expect(settlement).toEqual({
      status: "succeeded",
      result: { refused: expect.stringMatching(new RegExp(`RangeError: itx kv\\.set: its arguments are \\d+ characters as JSON, past the ${MAX_CALL_ARGS_CHARS} one call of it may carry`)), small: 1 },
    });
  });

  it("a call that appends an event, or names a key, a path or a query, is held to the event's bound before anything is copied; a file write of 4 MiB of bytes still fits", { timeout: 60_000 }, async () => {
    // "€" is one character and three bytes: 20 M of them passed the one bound of every call and
    // were refused only after the host had copied, parsed and encoded them (2 GB for two scripts).
    const settlement = await settlementOf(fx, uniquePath("args-small-ops"), [
      `const big = "€".repeat(${SMALL_CALL_ARGS_CHARS});`,
      "const out: string[] = [];",
      "for (const call of [() => itx.chat.sendMessage(big), () => itx.agent.append({ type: \"x/y\", payload: { big } }), () => itx.kv.get(big), () => itx.docs.search({ q: big })]) {",
      "  try { await call(); out.push(\"called\"); } catch (e) { out.push(String(e)); }",
      "}",
      `const bytes = new Uint8Array(${ITX_FILE_MAX_BYTES});`,
      "for (let i = 0; i < bytes.length; i += 4096) bytes[i] = i % 251;",
      'await itx.files.write("max.bin", bytes);',
      'const back = await itx.files.get("max.bin").bytes();',
      "out.push(String(back.length === bytes.length && back.every((b, i) => b === bytes[i])));",
      "return out;",
    ]);
    expect(settlement.status === "failed" ? settlement.error : settlement.status).toBe("succeeded");
    const out = settlement.status === "succeeded" ? (settlement.result as string[]) : [];
    const refusal = (op: string) => new RegExp(`^RangeError: itx ${op.replace(".", "\\.")}: its arguments are \\d+ characters as JSON, past the ${SMALL_CALL_ARGS_CHARS} one call of it may carry; pass less per call\\.$`);
    expect(out.slice(0, 4)).toEqual([expect.stringMatching(refusal("chat.sendMessage")), expect.stringMatching(refusal("agent.append")), expect.stringMatching(refusal("kv.get")), expect.stringMatching(refusal("docs.search"))]);
    expect(out[4]).toBe("true");
    expect(maxCallArgsChars("files.write")).toBe(MAX_CALL_ARGS_CHARS);
    expect(maxCallArgsChars("chat.sendMessage")).toBe(SMALL_CALL_ARGS_CHARS);
  });

  it("a script that makes its arguments JSON nothing is refused that call, and cannot get later calls past the bound uncounted", { timeout: 60_000 }, async () => {
    const each = 4 * 1024 * 1024;
    const fit = Math.floor(MAX_PENDING_CALL_ARGS_CHARS / (each + 100));
    const settlement = await settlementOf(fx, uniquePath("args-not-json"), [
      "let broken = '';",
      "(Array.prototype as any).toJSON = () => undefined;",
      'try { await itx.kv.get("a"); broken = "called"; } catch (e) { broken = String(e); }',
      "delete (Array.prototype as any).toJSON;",
      `const s = "y".repeat(${each});`,
      'const outcomes = await Promise.allSettled(Array.from({ length: 12 }, () => itx.kv.set("k", s)));',
      'return { broken, refused: outcomes.filter((o) => o.status === "rejected" && String(o.reason).includes("await some calls before starting more")).length };',
    ]);
    expect(settlement).toEqual({
      status: "succeeded",
      result: { broken: "RangeError: itx kv.get: its arguments did not become JSON text (is a toJSON or JSON.stringify replaced?); nothing was called.", refused: 12 - fit },
    });
  });

  it("calls started at once past the bound they may carry together are refused before they are copied", { timeout: 60_000 }, async () => {
    const each = 4 * 1024 * 1024;
    const fit = Math.floor(MAX_PENDING_CALL_ARGS_CHARS / (each + 100));
    await expectRefusedPastFit("args-many", 12, fit, `const s = "y".repeat(${each});`, 'itx.kv.set("k", s)');
  });
});

// Arguments are also held to a count of arrays, objects and keys: QuickJS's heap bounds the values,
// not what their text builds in the host (one object repeated a million times is six megabytes of
// `{},` and a million objects parsed; an object of 600 000 keys stopped the host's thread 0.5 s a call).
describe("itx call arguments of many arrays, objects and keys", () => {
  it("a call past the per-call count is refused naming it, and the script goes on", { timeout: 60_000 }, async () => {
    const settlement = await settlementOf(fx, uniquePath("args-many-objects"), [
      "let refused = '';",
      `try { await itx.kv.set("many", new Array(${MAX_JSON_NODES}).fill({})); } catch (e) { refused = String(e); }`,
      `await itx.kv.set("fit", new Array(${MAX_JSON_NODES - 2}).fill({}));`,
      'return { refused, fit: ((await itx.kv.get("fit")) as unknown[]).length };',
    ]);
    expect(settlement).toEqual({
      status: "succeeded",
      result: { refused: `RangeError: itx kv.set: its arguments hold ${MAX_JSON_NODES + 2} arrays, objects and keys, past the ${MAX_JSON_NODES} one call may carry; pass fewer per call.`, fit: MAX_JSON_NODES - 2 },
    });
  });

  it("one object of more keys than the count is refused naming it", { timeout: 60_000 }, async () => {
    const settlement = await settlementOf(fx, uniquePath("args-many-keys"), [
      `const wide = Object.fromEntries(Array.from({ length: ${MAX_JSON_NODES} }, (_, i) => ["k" + i, 0]));`,
      'try { await itx.kv.set("wide", wide); return "stored"; } catch (e) { return String(e); }',
    ]);
    expect(settlement).toEqual({
      status: "succeeded",
      result: `RangeError: itx kv.set: its arguments hold ${MAX_JSON_NODES + 2} arrays, objects and keys, past the ${MAX_JSON_NODES} one call may carry; pass fewer per call.`,
    });
  });

  it("calls started at once past the count they may hold together are refused", { timeout: 60_000 }, async () => {
    const each = 200_000;
    const fit = Math.floor(MAX_PENDING_CALL_NODES / (each + 2));
    await expectRefusedPastFit("args-many-objects-pending", 5, fit, "", `itx.docs.search({ q: "x", many: new Array(${each}).fill({}) })`);
  });
});

// A script's calls end with it: calls still waiting for one of its MAX_ITX_CALLS_IN_FLIGHT turns
// never start once it has returned. 3 000 unawaited sendMessage calls had landed after the
// script's settlement, one after another, while its agent's next script could already run.
describe("itx calls a script did not await", () => {
  it("do not outlive it: at most the calls already running land after its settlement", { timeout: 60_000 }, async () => {
    const path = uniquePath("unawaited");
    const { executionId } = await requestScript(fx, path, 'for (let i = 0; i < 3000; i++) void itx.chat.sendMessage("m" + i);\nreturn "returned";');
    const settled = await waitSettled(fx.store, path, executionId);
    expect(settled.payload.settlement).toEqual({ status: "succeeded", result: "returned" });
    // Given time for anything still queued to land
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const messages = (await fx.store.read(path)).filter((e) => e.type === "agents/web-message-sent");
    expect(messages.filter((e) => e.offset > settled.offset).length).toBeLessThanOrEqual(MAX_ITX_CALLS_IN_FLIGHT);
    expect(messages.length).toBeLessThan(3000);
  });
});
