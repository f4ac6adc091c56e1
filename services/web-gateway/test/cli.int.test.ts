// The CLI as users run it (`pnpm agents …` = tsx on cli/main.ts), against a real gateway over
// HTTP with a scoped API key: create, send, state, request N and --last, usage, tail (history, live,
// streaming text), send to a path with no agent (404 named), stop/pause/resume, and a gateway
// that is not there (the error names the URL and AGENTRT_URL).
import { execFile, spawn } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freeLoopbackPort } from "@agentrt/testing";
import { openTestStore, type TestStore } from "./support/store.ts";
import { startTestGateway, testKey, type TestGateway } from "./support/gateway-harness.ts";

const root = join(import.meta.dirname, "../../..");
const tsx = join(root, "node_modules/.bin/tsx");
const main = join(root, "services/web-gateway/src/cli/main.ts");
// `operate` too: stop, pause and resume steer the agent (the ownership table's operator actions).
const key = testKey([{ prefix: "/agents/cli", verbs: ["read", "append", "operate"] }]);
let ts: TestStore;
let gw: TestGateway;
let env: NodeJS.ProcessEnv;

const agents = async (...args: string[]) => (await promisify(execFile)(tsx, [main, ...args], { env, cwd: root })).stdout;
/** Runs the CLI expecting it to fail: its exit code and stderr. */
const failing = async (extraEnv: NodeJS.ProcessEnv, ...args: string[]) => {
  try {
    await promisify(execFile)(tsx, [main, ...args], { env: { ...env, ...extraEnv }, cwd: root });
  } catch (error) {
    const e = error as { code: number; stderr: string; stdout: string };
    return { code: e.code, stderr: e.stderr, stdout: e.stdout };
  }
  throw new Error(`agents ${args.join(" ")} succeeded; expected a failure`);
};

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

  it("prints what agents' streams hold with their control characters escaped: no escape sequence reaches the terminal, and JSON output still parses", { timeout: 60_000 }, async () => {
    // Given an agent whose title and message carry terminal escape sequences (set the window title, clear the screen, OSC 52 clipboard, a C1 CSI, DEL, a bidi override)
    const hostile = "/agents/cli/hostile";
    await ts.store.append(hostile, [{ type: "agent/created", payload: {} }]);
    const content = "hi\u001b[2J\u001b]52;c;cm0gLXJmIH4=\u0007 there\u009b31m\rover\u007f\u202egnp.exe";
    await ts.store.append(hostile, [
      { type: "agent/summary-updated", payload: { title: "t\u001b]0;pwned\u0007itle" } },
      { type: "agents/context-added", payload: { role: "user", content, actor: { type: "user", origin: "web" } } },
    ]);
    // When the CLI tails, lists and prints the state as JSON
    const tailed = await agents("tail", hostile, "--count", "3");
    const listed = await agents("list", hostile);
    const state = await agents("state", hostile);
    // Then no control or reordering character but newline reaches the terminal, and each is shown escaped
    for (const printed of [tailed, listed, state]) expect(printed).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/); // eslint-disable-line no-control-regex -- no control character may be printed
    expect(tailed).toContain("user: hi\\u001b[2J\\u001b]52;c;cm0gLXJmIH4=\\u0007 there\\u009b31m\\u000dover\\u007f\\u202egnp.exe");
    expect(listed).toContain("t\\u001b]0;pwned\\u0007itle");
    // And the JSON output is still JSON, holding the characters themselves
    expect(JSON.stringify(JSON.parse(state))).toContain(JSON.stringify(content).slice(1, -1));
  });

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
    const events = last + 1;
    expect(await agents("usage", path)).toMatch(
      new RegExp(`^/agents/cli/demo: ${events} of 1000000 events \\(0\\.0 %\\), [\\d.]+ KiB of 1\\.0 GiB \\(0\\.0 %\\)\\ntenant /agents/cli: 1 of 100000 streams \\(0\\.0 %\\), [\\d.]+ KiB of 16\\.0 GiB \\(0\\.0 %\\)\\n$`),
    );
    expect(JSON.parse(await agents("usage", path, "--json"))).toMatchObject({ streamPath: path, events, tenant: { prefix: "/agents/cli", streams: 1 } });
  });

  it("request --last shows the latest request, and says so when there is none", { timeout: 60_000 }, async () => {
    const fresh = "/agents/cli/no-requests";
    await agents("create", fresh);
    const none = await failing({}, "request", fresh, "--last");
    expect(none.code).toBe(1);
    expect(none.stderr).toContain(`${fresh} has no model request yet`);
    // Settle the open request first: while one is open the fold ignores another (not a request).
    const open = JSON.parse(await agents("state", path)).state.openRequest as { requestedAtOffset: number };
    await ts.store.append(path, [{ type: "agent/llm-request-settled", payload: { requestOffset: open.requestedAtOffset, result: { status: "succeeded", text: "ok" } } }]);
    await ts.store.append(path, [{ type: "agents/context-added", payload: { role: "user", content: "again", actor: { type: "user", origin: "web" } } }]);
    const [requested] = (await ts.store.append(path, [{ type: "agent/llm-request-requested", payload: { model: "offline/last", expiresAt: "2099-01-01T00:00:00.000Z" } }])).events;
    expect(await agents("request", path, "--last")).toContain(`request @${requested!.offset} · offline/last`);
    await expect(agents("request", path)).rejects.toThrow(/usage: agents request PATH \(OFFSET \| --last\)/);
  });

  it("send to a path with no agent is refused with the gateway's 404 and creates nothing; create then works", { timeout: 60_000 }, async () => {
    const missing = "/agents/cli/missing";
    const refused = await failing({}, "send", missing, "hello?");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`agents send: no agent at ${missing}; create it with \`agents create ${missing}\` (HTTP 404 not_found)`);
    expect(refused.stdout).toBe("");
    expect(await ts.store.lastOffset(missing)).toBe(0);
    expect(await agents("create", missing)).toMatch(/^created \/agents\/cli\/missing/);
    expect(await agents("send", missing, "hello")).toMatch(/^sent @\d+/);
  });

  it("send whose answer is lost after the message landed sends it again with the same key: stored once, and it says so", { timeout: 60_000 }, async () => {
    const lost = "/agents/cli/lost-answer";
    await agents("create", lost);
    // Given a proxy in front of the gateway that passes the first message on but cuts the
    // connection before its answer comes back (a gateway restarting, a load balancer's reset)
    const bodies: string[] = [];
    const proxy = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks);
        const isMessage = req.method === "POST" && req.url?.endsWith("/events") === true;
        if (isMessage) bodies.push(body.toString());
        void fetch(`${gw.url}${req.url}`, { method: req.method, headers: req.headers as Record<string, string>, ...(body.length > 0 ? { body } : {}) }).then(async (answer) => {
          const text = await answer.text();
          if (isMessage && bodies.length === 1) return req.socket.destroy();
          res.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/json" }).end(text);
        });
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      // When the CLI sends a message through it
      const { stdout, stderr } = await promisify(execFile)(tsx, [main, "send", lost, "only", "once"], { env: { ...env, AGENTRT_URL: url }, cwd: root });
      // Then it sent the message twice with one idempotency key, and the stream holds it once
      expect(bodies).toHaveLength(2);
      const keys = bodies.map((b) => (JSON.parse(b) as { events: { idempotencyKey?: string }[] }).events[0]?.idempotencyKey);
      expect(keys[0]).toMatch(/^cli\/send\/[0-9a-f-]{36}$/);
      expect(keys[1]).toBe(keys[0]);
      expect(stderr).toContain("sending it again in 0.5 s with the same idempotency key");
      const stored = (await ts.store.read(lost)).filter((e) => e.type === "agents/context-added" && e.payload.content === "only once");
      expect(stored).toHaveLength(1);
      expect(stdout).toBe(`sent @${stored[0]!.offset} (it had landed before the answer was lost)\n`);
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it("stop, pause and resume append the chat controls' batches", { timeout: 60_000 }, async () => {
    const ctl = "/agents/cli/controls";
    await agents("create", ctl);
    expect(await agents("stop", ctl)).toMatch(/^stopped \(interrupted and paused\) \/agents\/cli\/controls \(@\d+, @\d+\)/);
    expect(JSON.parse(await agents("state", ctl)).state.paused).toMatchObject({ reason: "stopped by the user" });
    await agents("resume", ctl);
    expect(JSON.parse(await agents("state", ctl)).state.paused).toBeNull();
    await agents("pause", ctl);
    expect(JSON.parse(await agents("state", ctl)).state.paused).toMatchObject({ reason: "paused by the user" });
  });

  it("a gateway that is not there: every command names the URL it tried and how to point elsewhere", { timeout: 60_000 }, async () => {
    const closed = await freeLoopbackPort(); // nothing listens here
    const url = `http://127.0.0.1:${closed}`;
    for (const args of [["send", path, "hi"], ["state", path], ["tail", path]]) {
      const res = await failing({ AGENTRT_URL: url }, ...args);
      expect(res.code).toBe(1);
      expect(res.stderr).toContain(`cannot reach the agentrt gateway at ${url} (ECONNREFUSED)`);
      expect(res.stderr).toContain("AGENTRT_URL");
      expect(res.stderr).toContain("the port ./scripts/up.sh printed");
    }
    const bad = await failing({ AGENTRT_URL: "localhost:8080" }, "state", path);
    expect(bad.stderr).toContain('AGENTRT_URL must be an http(s) URL such as http://127.0.0.1:8080; got "localhost:8080"');
  });

  it("a server at AGENTRT_URL that never ends an answer or pages backwards: tail, state and list fail naming the rule, instead of growing or paging without end", { timeout: 90_000 }, async () => {
    // Given a server answering an event stream frame that never ends, and a JSON body that never ends
    const piece = Buffer.alloc(1024 * 1024, "A");
    let page = 0;
    const server = createServer((req, res) => {
      // A listing whose cursor goes back and forth between two values
      if ((req.url ?? "").startsWith("/v1/agents?") || req.url === "/v1/agents") {
        res.writeHead(200, { "content-type": "application/json" });
        return res.end(JSON.stringify({ agents: [{ streamPath: `/agents/loop/${page}`, lastOffset: 1 }], next: ++page % 2 === 0 ? "/agents/loop/a" : "/agents/loop/b" }));
      }
      const sse = (req.url ?? "").includes("/subscribe");
      res.writeHead(200, { "content-type": sse ? "text/event-stream" : "application/json" });
      res.write(sse ? 'id: 1\ndata: {"offset":1,"type":"agent/created","payload":{}}\n\ndata: ' : '{"x":"');
      const pump = (): void => {
        while (!res.destroyed && res.write(piece));
        if (!res.destroyed) res.once("drain", pump);
      };
      pump();
      res.on("error", () => {});
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      // When the CLI tails and asks for state there
      const tailed = await failing({ AGENTRT_URL: url }, "tail", path);
      const state = await failing({ AGENTRT_URL: url }, "state", path);
      // Then each fails, saying what was too long, after printing what was whole
      expect(tailed.code).toBe(1);
      expect(tailed.stdout).toContain("@1 agent/created");
      expect(tailed.stderr).toContain(`the gateway at ${url} sent an event stream frame of more than 8388608 characters (an event is at most 1 MiB); is AGENTRT_URL an agentrt gateway?`);
      expect(state.code).toBe(1);
      expect(state.stderr).toContain(`the gateway at ${url} answered more than 134217728 bytes; is AGENTRT_URL an agentrt gateway?`);
      // And a listing that pages backwards ends instead of paging for ever
      const listed = await failing({ AGENTRT_URL: url }, "list");
      expect(listed.code).toBe(1);
      expect(listed.stderr).toContain(`the gateway at ${url} answered a listing page whose next ("/agents/loop/a") is not past the one before`);
    } finally {
      server.closeAllConnections();
      server.close();
    }
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
