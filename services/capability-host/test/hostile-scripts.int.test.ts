// Scripts that try to take more than their share of a host (issue #12): an agent's flood waits
// behind its own per-agent limit while another agent's trivial script is served at once; a
// script that never awaits is stopped naming the synchronous-slice limit (not the execution
// deadline); a script over the size bound settles without being checked or run; a script's
// stream read is bounded by bytes, not only by count; so are the files it writes and reads.

import type { AgentEvent } from "@agentrt/contract";
import { waitFor } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_SANDBOX_LIMITS } from "../src/index.ts";
import { ITX_READ_MAX_BYTES, MAX_DOCS_QUERY_CHARS } from "../src/itx/host-calls.ts";
import { AGENT_FILES_BUCKET, AGENT_FILES_INDEX_BUCKET, indexFile, ITX_FILE_MAX_BYTES } from "../src/itx/agent-storage.ts";
import { Kvm } from "@nats-io/kv";
import { Objm } from "@nats-io/obj";
import { eventsOf, type HostFixture, requestScript, startFixture, uniquePath, waitSettled } from "./harness.ts";

let fx: HostFixture;
beforeAll(async () => {
  fx = await startFixture({
    host: {
      concurrency: 4,
      perAgentConcurrency: 2,
      sandboxLimits: { ...DEFAULT_SANDBOX_LIMITS, maxSyncSliceMs: 500 },
      limits: { maxSourceBytes: 4_096 },
    },
  });
});
afterAll(async () => fx?.stop());

type Settled = Extract<AgentEvent, { type: "capability-host/script-run-settled" }>;
const isSettled = (e: AgentEvent): e is Settled => e.type === "capability-host/script-run-settled";

/** Runs a script for `path`, expects it to succeed, and gives its result. */
async function succeededResult<T>(path: string, code: string): Promise<T> {
  const { executionId } = await requestScript(fx, path, code);
  const settled = await waitSettled(fx.store, path, executionId, 30_000);
  expect(settled.payload.settlement.status).toBe("succeeded");
  return (settled.payload.settlement as { result: T }).result;
}

describe("capability host: hostile and busy scripts", () => {
  it("queues one agent's flood of 20 slow scripts behind its own limit of 2 while another agent's trivial script settles within 1 s", async () => {
    const flood = uniquePath("flood");
    // 1.5 s of computing, in stretches shorter than this fixture's 500 ms slice limit.
    const slow = 'for (let i = 0; i < 5; i++) {\n  const end = Date.now() + 300;\n  while (Date.now() < end) {}\n  await itx.kv.get("tick");\n}\nreturn "slow";';
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push((await requestScript(fx, flood, slow)).executionId);
    await waitFor(async () => (await eventsOf(fx.store, flood, "capability-host/script-run-started")).length >= 2, { timeoutMs: 30_000, what: "the flood running" });

    const other = uniquePath("other");
    const { executionId } = await requestScript(fx, other, "return 2;");
    const settled = await waitSettled(fx.store, other, executionId, 10_000);
    expect(settled.payload.settlement).toEqual({ status: "succeeded", result: 2 });
    const requested = (await eventsOf(fx.store, other, "capability-host/script-run-requested")).at(-1)!;
    expect(Date.parse(settled.createdAt) - Date.parse(requested.createdAt)).toBeLessThanOrEqual(1_000);
    // The flood was still running when the other agent was served.
    expect((await fx.store.read(flood)).filter(isSettled).length).toBeLessThan(20);

    // Never more than 2 of the flood's scripts between started and settled at once.
    await waitFor(async () => (await fx.store.read(flood)).filter(isSettled).length === 20, { timeoutMs: 60_000, what: "the flood settled" });
    let running = 0;
    let most = 0;
    for (const e of await fx.store.read(flood)) {
      if (e.type === "capability-host/script-run-started") most = Math.max(most, ++running);
      else if (isSettled(e)) running--;
    }
    expect(most).toBe(2);
    const outcomes = (await fx.store.read(flood)).filter(isSettled).map((e) => e.payload.settlement);
    expect(outcomes.every((s) => s.status === "succeeded" && s.result === "slow")).toBe(true);
    expect(outcomes).toHaveLength(ids.length);
  }, 90_000);

  it("stops a script that never awaits at the synchronous-slice limit and names that limit", async () => {
    const path = uniquePath("slice");
    const { executionId } = await requestScript(fx, path, "while (true) {}");
    const settled = await waitSettled(fx.store, path, executionId, 20_000);
    expect(settled.payload.settlement).toEqual({
      status: "failed",
      error: "Script ran synchronously for 500 ms without awaiting (SCRIPT_MAX_SYNC_SLICE_MS) and was stopped.",
      failureKind: "deadline",
      phase: "execution",
      executionMayHaveOccurred: true,
      cancellation: "external-work-may-continue",
    });
    const next = await requestScript(fx, path, "return 'still serving';");
    expect((await waitSettled(fx.store, path, next.executionId)).payload.settlement).toEqual({ status: "succeeded", result: "still serving" });
  });

  it("stops a script that awaits what nothing will settle at once, so two agents' stuck scripts do not hold every slot until their deadlines", async () => {
    // Given two agents each requesting two scripts that await a promise nothing settles (all 4 slots), one after an itx call
    const stuck = ["await new Promise(() => {}); return 1;", 'await itx.kv.set("before", 1); await new Promise(() => {}); return 1;'];
    const runs: { path: string; executionId: string }[] = [];
    for (const agent of ["stuck-a", "stuck-b"]) {
      const path = uniquePath(agent);
      for (const code of stuck) runs.push({ path, ...(await requestScript(fx, path, code, { expiresInMs: 120_000 })) });
    }
    // When a third agent asks for a trivial script
    const other = uniquePath("stuck-other");
    const started = Date.now();
    const trivial = await requestScript(fx, other, "return 'served';");
    // Then it is served without waiting for their deadlines, and each stuck script failed naming why
    expect((await waitSettled(fx.store, other, trivial.executionId, 20_000)).payload.settlement).toEqual({ status: "succeeded", result: "served" });
    expect(Date.now() - started).toBeLessThan(15_000);
    for (const run of runs) {
      expect((await waitSettled(fx.store, run.path, run.executionId, 20_000)).payload.settlement).toMatchObject({
        status: "failed",
        failureKind: "runtime",
        error: expect.stringContaining("the script awaits something nothing will ever settle (no itx call is pending and the sandbox has no timers)"),
      });
    }
  });

  it("does not stop a script while one of its itx calls is unanswered", async () => {
    const path = uniquePath("awaiting-call");
    const { executionId } = await requestScript(fx, path, 'const found = await itx.docs.search({ q: "kv" }); return Array.isArray(found) || typeof found === "object";');
    expect((await waitSettled(fx.store, path, executionId, 20_000)).payload.settlement).toEqual({ status: "succeeded", result: true });
  });

  it("settles a script over the size bound as not run, naming its size and the limit, without checking or starting it", async () => {
    const path = uniquePath("too-big");
    const code = `const data = "${"x".repeat(5_000)}";\nreturn data.length;`;
    const { executionId } = await requestScript(fx, path, code);
    const settled = await waitSettled(fx.store, path, executionId);
    expect(settled.payload.settlement).toEqual({
      status: "failed",
      error:
        `Script was NOT executed: its source is ${code.length} bytes, over the limit of 4096 bytes (SCRIPT_MAX_SOURCE_BYTES); ` +
        "send a shorter script (keep data in files or KV, not in the code).",
      failureKind: "typecheck",
      phase: "typecheck",
      executionMayHaveOccurred: false,
      cancellation: "not-applicable",
    });
    expect(await eventsOf(fx.store, path, "capability-host/script-run-started")).toHaveLength(0);
  });

  it("returns at most 4 MiB of events to a script's read of a stream of large events, and the rest from where it left off", async () => {
    // Given an agent whose stream holds 12 events of ~850 kB (~10 MB)
    const big = uniquePath("big-read");
    await fx.store.append(big, [{ type: "agent/created", payload: {}, idempotencyKey: "agent/created" }]);
    for (let i = 0; i < 12; i++) await fx.store.append(big, [{ type: "agents/context-added", payload: { role: "system", content: `${i}:${"x".repeat(850_000)}` } }]);
    // When its script reads with the largest limit, then on from the last offset it got
    const code = [
      "const me = itx.streams.get(itx.agent.path);",
      "const first = await me.read({ fromOffset: 1, limit: 1000 });",
      "const next = await me.read({ fromOffset: first[first.length - 1].offset + 1, limit: 1000 });",
      "return { first: first.length, firstLast: first[first.length - 1].offset, next: next[0].offset };",
    ].join("\n");
    const result = await succeededResult<{ first: number; firstLast: number; next: number }>(big, code);
    // Then the first read stopped before 4 MiB (the created event and four large ones), and the next went on from there
    expect(result.first).toBe(1 + Math.floor(ITX_READ_MAX_BYTES / 850_000)); // 1 + 4: a fifth large one would pass 4 MiB
    expect(result.next).toBe(result.firstLast + 1);
  }, 60_000);

  it("refuses a file write or read over 4 MiB, naming the size and the limit, and writes nothing", async () => {
    const agent = uniquePath("big-file");
    // Given a file over the limit put in the agent's workspace by other means
    const files = await new Objm(fx.nc).open(AGENT_FILES_BUCKET);
    const put = await files.putBlob({ name: `${agent}:big.txt` }, new Uint8Array(ITX_FILE_MAX_BYTES + 1).fill(120));
    await indexFile(await new Kvm(fx.nc).open(AGENT_FILES_INDEX_BUCKET), agent, "big.txt", put);
    // When a script writes one over the limit, and reads that one as text and as bytes
    const code = [
      "const out = {};",
      'try { await itx.files.write("huge.txt", "x".repeat(4 * 1024 * 1024 + 10)); out.write = "written"; } catch (e) { out.write = String(e.message ?? e); }',
      'out.listed = (await itx.files.list()).map((f) => f.path);',
      'try { await itx.files.get("big.txt").text(); out.text = "read"; } catch (e) { out.text = String(e.message ?? e); }',
      'try { await itx.files.get("big.txt").bytes(); out.bytes = "read"; } catch (e) { out.bytes = String(e.message ?? e); }',
      'await itx.files.write("small.txt", "fine");',
      'out.small = await itx.files.get("small.txt").text();',
      "return out;",
    ].join("\n");
    const out = await succeededResult<Record<string, unknown>>(agent, code);
    // Then each is refused naming its size and the limit, nothing was written, and small files work
    expect(out.write).toMatch(new RegExp(`"huge\\.txt" is ${4 * 1024 * 1024 + 10} bytes, over the ${ITX_FILE_MAX_BYTES}-byte limit on a file a script may write`));
    expect(out.listed).toEqual(["big.txt"]);
    expect(out.text).toMatch(new RegExp(`"big\\.txt" is ${ITX_FILE_MAX_BYTES + 1} bytes, over the ${ITX_FILE_MAX_BYTES}-byte limit on a file a script may read`));
    expect(out.bytes).toEqual(out.text);
    expect(out.small).toBe("fine");
  }, 60_000);

  it("refuses a docs search longer than a query, naming its length and the limit, and answers one at the limit", async () => {
    // An 18 M-character query held the host's thread 6 s: long enough to lose its liveness lease.
    const code = [
      "const out = {};",
      'const words = "word ".repeat(20_000);',
      "try { await itx.docs.search({ q: words }); out.long = \"answered\"; } catch (e) { out.long = String(e.message ?? e); }",
      // 18 M characters: refused before they leave the sandbox (the bound of a call's arguments).
      'try { await itx.docs.search({ q: "word ".repeat(3_600_000) }); out.huge = "answered"; } catch (e) { out.huge = String(e.message ?? e); }',
      `out.atLimit = (await itx.docs.search({ q: "send chat message ".repeat(100).slice(0, ${MAX_DOCS_QUERY_CHARS}) })).length > 0;`,
      "out.length = words.length;",
      "return out;",
    ].join("\n");
    const out = await succeededResult<{ long: string; huge: string; atLimit: boolean; length: number }>(uniquePath("docs-query"), code);
    expect(out.long).toBe(`docs.search({q}): q has ${out.length} characters; a query is at most ${MAX_DOCS_QUERY_CHARS} (a few words)`);
    expect(out.huge).toMatch(/^itx docs\.search: its arguments are \d+ characters as JSON, past the \d+ one call of it may carry; pass less per call\.$/);
    expect(out.atLimit).toBe(true);
  }, 60_000);
});
