// `GET /v1/agents/{path}/audit` and `pnpm agents audit`, against a real gateway and nats-server:
// a clean stream passes; a stream whose request was settled twice (written behind the gateway's
// back, as a buggy service would) fails with the offsets involved and a non-zero exit; a read
// key is enough, a key for another prefix is not.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openTestStore, type TestStore } from "./support/store.ts";
import { startTestGateway, testKey, type TestGateway } from "./support/gateway-harness.ts";
import { enc } from "./support/http.ts";

const root = join(import.meta.dirname, "../../..");
const tsx = join(root, "node_modules/.bin/tsx");
const main = join(root, "services/web-gateway/src/cli/main.ts");
const reader = testKey([{ prefix: "/agents/audit", verbs: ["read"] }]);
const stranger = testKey([{ prefix: "/agents/other", verbs: ["read"] }]);
let ts: TestStore;
let gw: TestGateway;

const agents = (...args: string[]) =>
  promisify(execFile)(tsx, [main, ...args], { env: { ...process.env, AGENTRT_URL: gw.url, AGENTRT_API_KEY: reader.apiKey }, cwd: root }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );

async function turn(path: string, settleTwice: boolean): Promise<number> {
  await ts.store.append(path, [{ type: "agent/created", payload: {} }]);
  await ts.store.append(path, [{ type: "agents/context-added", payload: { role: "user", content: "hi", actor: { type: "user", origin: "web" } } }]);
  const requested = await ts.store.append(path, [{ type: "agent/llm-request-requested", payload: { model: "m", expiresAt: "2099-01-01T00:00:00.000Z" } }]);
  const r = requested.events[0]!.offset;
  const settle = (text: string) => ({ type: "agent/llm-request-settled", payload: { requestOffset: r, result: { status: "succeeded", text } } });
  await ts.store.append(path, [{ type: "agents/context-added", payload: { role: "assistant", content: "hello", llmRequestOffset: r } }, settle("hello")]);
  if (settleTwice) await ts.store.append(path, [settle("again")]);
  return r;
}

beforeAll(async () => {
  ts = await openTestStore();
  gw = await startTestGateway({ store: ts.store, keys: [reader, stranger] });
});
afterAll(async () => {
  await gw?.close();
  await ts?.close();
});

describe("audit", () => {
  it("answers a clean stream with no violations, and a broken one with the offsets involved", async () => {
    await turn("/agents/audit/clean", false);
    const r = await turn("/agents/audit/broken", true);
    const get = (path: string, key = reader.apiKey) => fetch(`${gw.url}/v1/agents/${enc(path)}/audit`, { headers: { authorization: `Bearer ${key}` } });

    const clean = await get("/agents/audit/clean");
    expect(clean.status).toBe(200);
    expect(await clean.json()).toMatchObject({ streamPath: "/agents/audit/clean", events: 5, requests: 1, violations: [], notes: [] });

    const broken = (await (await get("/agents/audit/broken")).json()) as { violations: Array<{ rule: string; offsets: number[] }> };
    expect(broken.violations.map((v) => v.rule).sort()).toEqual(["request-settled-once", "settlement-names-open-request"]);
    expect(broken.violations.find((v) => v.rule === "request-settled-once")?.offsets).toEqual([r, r + 2, r + 3]);

    expect((await get("/agents/audit/clean", stranger.apiKey)).status).toBe(403);
    expect((await get("/agents/audit/none")).status).toBe(404);
  });

  it("the CLI prints each stream and exits 1 when any has a violation", { timeout: 60_000 }, async () => {
    const ok = await agents("audit", "/agents/audit/clean");
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/^\/agents\/audit\/clean: ok \(5 events @1\.\.@5, 1 requests/);
    const all = await agents("audit", "--prefix", "/agents/audit");
    expect(all.code).toBe(1);
    expect(all.stdout).toContain("/agents/audit/broken: 2 violation(s)");
    expect(all.stdout).toMatch(/✗ request-settled-once: request @3 is settled 2 times \[@3, @5, @6\]/);
    expect(all.stdout).toContain("2 streams audited, 1 with violations");
  });

  it("the CLI audits and lists every agent under a prefix, past the first page of the listing", { timeout: 90_000 }, async () => {
    // Given a gateway whose listing pages end after folding one agent's events
    const paging = await startTestGateway({ store: ts.store, keys: [reader], limits: { maxListFoldBytes: 1 } });
    const at = (...args: string[]) =>
      promisify(execFile)(tsx, [main, ...args], { env: { ...process.env, AGENTRT_URL: paging.url, AGENTRT_API_KEY: reader.apiKey }, cwd: root }).then(
        (r) => ({ code: 0, stdout: r.stdout }),
        (e: { code: number; stdout: string }) => ({ code: e.code, stdout: e.stdout }),
      );
    try {
      // And three agents under a prefix, the broken one listed last
      for (const name of ["a", "b"]) await turn(`/agents/audit/paged/${name}`, false);
      await turn("/agents/audit/paged/c", true);
      const page = (await (await fetch(`${paging.url}/v1/agents?prefix=${enc("/agents/audit/paged")}`, { headers: { authorization: `Bearer ${reader.apiKey}` } })).json()) as { agents: unknown[]; next?: string };
      expect(page.agents).toHaveLength(1);
      expect(page.next).toBe("/agents/audit/paged/a");
      // When the CLI audits and lists the prefix
      const audited = await at("audit", "--prefix", "/agents/audit/paged");
      const listed = await at("list", "/agents/audit/paged");
      // Then every page is read: the broken agent on the last page fails the audit
      expect(audited.stdout).toContain("3 streams audited, 1 with violations");
      expect(audited.stdout).toContain("/agents/audit/paged/c: 2 violation(s)");
      expect(audited.code).toBe(1);
      expect(listed.stdout.split("\n").filter((l) => l.startsWith("/agents/audit/paged/")).map((l) => l.split(" ")[0])).toEqual(["/agents/audit/paged/a", "/agents/audit/paged/b", "/agents/audit/paged/c"]);
    } finally {
      await paging.close();
    }
  });

  it("given agents whose paths share text but not a segment, when the CLI audits a prefix, then only the streams under it are audited", { timeout: 90_000 }, async () => {
    // Given two agents under /agents/audit/seg and a broken one under /agents/audit/segment
    for (const name of ["a", "b"]) await turn(`/agents/audit/seg/${name}`, false);
    await turn("/agents/audit/segment/c", true);
    // When the CLI audits /agents/audit/seg (the listing's text match also finds /agents/audit/segment/c)
    const audited = await agents("audit", "--prefix", "/agents/audit/seg");
    // Then the two under it are audited, and the one beside it is not
    expect(audited.stdout).toContain("2 streams audited, 0 with violations");
    expect(audited.stdout).not.toContain("/agents/audit/segment/c");
    expect(audited.code).toBe(0);
    // And a prefix with nothing under it says so, naming the rule
    const none = await agents("audit", "--prefix", "/agents/audit/se");
    expect(none.code).toBe(1);
    expect(none.stderr).toContain("no agent under /agents/audit/se that this key may read (a prefix covers whole path segments");
  });
});
