// The quickstart supervisor (scripts/stack/supervisor.ts) with small real child processes:
// children start only once what they depend on is ready, a child that crashes is restarted with
// backoff (and the output says so) while the others keep running, stop terminates
// dependents before what they depend on, and a child slow to turn ready is reported with what
// its readiness probe answers.

import { readFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freeLoopbackPort, waitFor } from "@agentrt/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { restartDelayMs, Supervisor, type ChildSpec } from "../../scripts/stack/supervisor.ts";

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "agentrt-supervisor-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A child that appends "<name> start|ready|stop <ms>" to a journal; listens on `port` once ready. */
function child(name: string, options: { port: number; dependsOn?: string[]; delayMs?: number; crashOnceAfterMs?: number }): ChildSpec {
  const journal = join(dir, "journal");
  const marker = join(dir, `${name}.crashed`);
  const source = `
    const fs = require("node:fs"); const http = require("node:http");
    const note = (what) => fs.appendFileSync(${JSON.stringify(journal)}, ${JSON.stringify(name)} + " " + what + " " + Date.now() + "\\n");
    note("start");
    setTimeout(() => {
      http.createServer((_q, s) => s.end("ok")).listen(${options.port}, "127.0.0.1", () => note("ready"));
      ${options.crashOnceAfterMs === undefined ? "" : `if (!fs.existsSync(${JSON.stringify(marker)})) setTimeout(() => { fs.writeFileSync(${JSON.stringify(marker)}, ""); note("crash"); process.exit(3); }, ${options.crashOnceAfterMs});`}
    }, ${options.delayMs ?? 0});
    process.on("SIGTERM", () => { note("stop"); process.exit(0); });`;
  return {
    name,
    command: process.execPath,
    args: ["-e", source],
    env: {},
    dependsOn: options.dependsOn ?? [],
    ready: { kind: "http", url: `http://127.0.0.1:${options.port}/` },
  };
}

function journal(): Array<{ name: string; what: string; at: number }> {
  return readFileSync(join(dir, "journal"), "utf8")
    .trim()
    .split("\n")
    .map((line) => {
      const [name, what, at] = line.split(" ");
      return { name: name!, what: what!, at: Number(at) };
    });
}
const at = (name: string, what: string) => journal().find((e) => e.name === name && e.what === what)?.at;

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.stop();
  rmSync(join(dir, "journal"), { force: true });
});

describe("the quickstart supervisor", () => {
  it("starts a child only once the children it depends on are ready", async () => {
    const [a, b, c] = [await freeLoopbackPort(), await freeLoopbackPort(), await freeLoopbackPort()];
    supervisor = new Supervisor(dir, process.env);
    await supervisor.start([child("nats", { port: a, delayMs: 400 }), child("host", { port: b, dependsOn: ["nats"] }), child("provider", { port: c, dependsOn: ["host"] })]);
    expect(at("host", "start")!).toBeGreaterThanOrEqual(at("nats", "ready")!);
    expect(at("provider", "start")!).toBeGreaterThanOrEqual(at("host", "ready")!);
  });

  it("restarts a child that crashes, says so, and leaves the others running; stop goes dependents first", async () => {
    const out = vi.spyOn(process.stdout, "write");
    const [a, b] = [await freeLoopbackPort(), await freeLoopbackPort()];
    supervisor = new Supervisor(dir, process.env);
    await supervisor.start([child("nats", { port: a }), child("host", { port: b, dependsOn: ["nats"], crashOnceAfterMs: 200 })]);
    const output = () => out.mock.calls.map((c) => String(c[0])).join("");
    await waitFor(() => /host ready again/.test(output()), { timeoutMs: 15_000 });
    const printed = output();
    out.mockRestore();
    expect(printed).toMatch(/host exited unexpectedly \(code 3\) after [\d.]+ s; restarting it in 0\.5 s \(restart #1\)/);
    expect(journal().filter((e) => e.name === "host" && e.what === "start")).toHaveLength(2);
    expect(journal().filter((e) => e.name === "nats" && e.what === "start")).toHaveLength(1);

    await supervisor.stop();
    expect(at("host", "stop")!).toBeLessThanOrEqual(at("nats", "stop")!);
    expect(journal().findIndex((e) => e.name === "host" && e.what === "stop")).toBeLessThan(journal().findIndex((e) => e.name === "nats" && e.what === "stop"));
  });

  it("reports a child that is slow to turn ready with what its /readyz answers", async () => {
    const out = vi.spyOn(process.stdout, "write");
    const port = await freeLoopbackPort();
    // A child whose probe answers 503 naming what it waits for, for 1.5 s, then 200
    const source = `
      const started = Date.now();
      require("node:http").createServer((_q, s) => {
        if (Date.now() - started < 1500) s.writeHead(503).end("not ready; unmet: NATS connected\\n");
        else s.end("ready\\n");
      }).listen(${port}, "127.0.0.1");
      process.on("SIGTERM", () => process.exit(0));`;
    supervisor = new Supervisor(dir, process.env, 10_000, 300);
    await supervisor.start([{ name: "slow", command: process.execPath, args: ["-e", source], env: {}, dependsOn: [], ready: { kind: "http", url: `http://127.0.0.1:${port}/readyz` } }]);
    const printed = out.mock.calls.map((c) => String(c[0])).join("");
    out.mockRestore();
    expect(printed).toMatch(/still waiting for slow to be ready \(\d+ s; 503 not ready; unmet: NATS connected\)/);
    expect(printed).toMatch(/slow ready in [\d.]+ s/);
  });

  it("backs off from 0.5 s, doubling, to at most 10 s between restarts", () => {
    expect([1, 2, 3, 4, 5, 6, 7, 50].map(restartDelayMs)).toEqual([500, 1_000, 2_000, 4_000, 8_000, 10_000, 10_000, 10_000]);
  });
});
