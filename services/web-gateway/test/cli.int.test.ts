// The CLI as users run it (`pnpm agents …` = tsx on cli/main.ts), against a real gateway over
// HTTP with a scoped API key: create, send, state, request N, tail (history, live, streaming text).
import { execFile, spawn } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openTestStore, type TestStore } from "./support/store.ts";
import { startTestGateway, testKey, type TestGateway } from "./support/gateway-harness.ts";

const root = join(import.meta.dirname, "../../..");
const tsx = join(root, "node_modules/.bin/tsx");
const main = join(root, "services/web-gateway/src/cli/main.ts");
const key = testKey([{ prefix: "/agents/cli", verbs: ["read", "append"] }]);
let ts: TestStore;
let gw: TestGateway;
let env: NodeJS.ProcessEnv;

const agents = async (...args: string[]) => (await promisify(execFile)(tsx, [main, ...args], { env, cwd: root })).stdout;

beforeAll(async () => {
  ts = await openTestStore();
  gw = await startTestGateway({ store: ts.store, keys: [key] });
  env = { ...process.env, AGENTRT_URL: gw.url, AGENTRT_API_KEY: key.apiKey };
});
afterAll(async () => {
  await gw?.close();
  await ts?.close();
});

describe("pnpm agents", () => {
  const path = "/agents/cli/demo";

  it("create, send, state and request N", { timeout: 150_000 }, async () => {
    expect(await agents("create", path)).toMatch(/^created \/agents\/cli\/demo \(\d+ birth events/);
    expect(await agents("send", path, "hello", "there")).toMatch(/^sent @\d+/);
    const state = JSON.parse(await agents("state", path));
    expect(state.state.birthCertificate).toEqual({ createdAtOffset: 1 });
    const last = state.lastOffset as number;
    await ts.store.append(path, [{ type: "agent/llm-request-requested", payload: { model: "offline/echo", expiresAt: "2099-01-01T00:00:00.000Z" } }]);
    const request = await agents("request", path, String(last + 1));
    expect(request).toContain(`request @${last + 1} · offline/echo`);
    expect(request).toContain("hello there");
    expect(request).toContain("── [1] system");
    await expect(agents("request", path, "1")).rejects.toThrow(/HTTP 404/);
  });

  it("tail prints history, then live events and the streamed reply text", { timeout: 60_000 }, async () => {
    const child = spawn(tsx, [main, "tail", path, "--from", "2", "--count", String((await ts.store.lastOffset(path)) + 1 - 2 + 1)], { env, cwd: root });
    let stdout = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    const exited = new Promise<number>((resolve) => child.on("exit", (code) => resolve(code ?? 1)));
    // Once the history is printed, stream a reply on the live lane, then settle it durably.
    const deadline = Date.now() + 15_000;
    while (!stdout.includes("agent/llm-request-requested") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(stdout).toContain("@2 agent/configured");
    const requestOffset = await ts.store.lastOffset(path);
    const chunk = (text: string, sequence: number) => ({
      type: "agent/llm-response-chunks",
      payload: { chunks: [{ choices: [{ delta: { content: text } }] }], llmRequestOffset: requestOffset, sequence },
    });
    // The driver's events, written as the driver writes them (the API refuses them).
    await ts.store.append(path, [chunk("Four", 0)]);
    await ts.store.append(path, [chunk(" it is.", 1)]);
    await ts.store.append(path, [{ type: "agent/llm-request-settled", payload: { requestOffset, durationMs: 5, result: { status: "succeeded", text: "Four it is." } } }]);
    expect(await exited).toBe(0);
    expect(stdout).toContain("Four it is.");
    expect(stdout.indexOf("Four it is.")).toBeLessThan(stdout.indexOf(`request @${requestOffset} succeeded`));
    const offsets = [...stdout.matchAll(/^@(\d+) /gm)].map((m) => Number(m[1]));
    expect(offsets).toEqual(Array.from({ length: offsets.length }, (_, i) => i + 2));
  });
});
