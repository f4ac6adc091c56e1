// Escape attempts through the whole host (work item → typecheck → sandbox): a script cannot
// reach the host process, its modules, the network or the file system. Each attempt also
// tries to DO damage (exit the host, read a file), so an escape would fail the test loudly;
// after each one the same host must still serve a fresh script.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type HostFixture, requestScript, startFixture, uniquePath, waitSettled } from "./harness.ts";

let fx: HostFixture;
beforeAll(async () => {
  fx = await startFixture();
});
afterAll(async () => fx?.stop());

async function runScript(code: string) {
  const path = uniquePath("escape");
  const { executionId } = await requestScript(fx, path, code);
  const settlement = (await waitSettled(fx.store, path, executionId)).payload.settlement;
  // The host survived and still serves.
  const probe = await requestScript(fx, path, "return 'alive';");
  expect((await waitSettled(fx.store, path, probe.executionId)).payload.settlement).toEqual({ status: "succeeded", result: "alive" });
  return settlement;
}

function expectRuntimeError(settlement: Awaited<ReturnType<typeof runScript>>, pattern: RegExp): void {
  expect(settlement.status).toBe("failed");
  if (settlement.status !== "failed") return;
  expect(settlement.failureKind).toBe("runtime");
  expect(settlement.error).toMatch(pattern);
}

describe("sandbox escapes", () => {
  it("process is not reachable", async () => {
    const s = await runScript("process.exit(7); return 'escaped';");
    expectRuntimeError(s, /ReferenceError: 'process' is not defined/);
  });

  it("require is not reachable", async () => {
    const s = await runScript("const fs = require('node:fs'); return fs.readFileSync('/etc/hostname', 'utf8');");
    expectRuntimeError(s, /ReferenceError: 'require' is not defined/);
  });

  it("fetch (network) is not reachable", async () => {
    const s = await runScript("const r = await fetch('http://127.0.0.1:4222/'); return await r.text();");
    expectRuntimeError(s, /ReferenceError: 'fetch' is not defined/);
  });

  it("globalThis.constructor.constructor('return process')() only reaches the sandbox's own realm", async () => {
    const s = await runScript("const p = globalThis.constructor.constructor('return process')(); p.exit(7); return 'escaped';");
    expectRuntimeError(s, /ReferenceError: 'process' is not defined/);
  });

  it("the Function constructor's global is the sandbox's global, with no host objects on it", async () => {
    const s = await runScript(
      "const g = (async () => {}).constructor.constructor('return this')();" +
        "return Object.getOwnPropertyNames(g).filter((k) => ['process', 'require', 'module', 'Buffer', 'fetch', '__hostCall', 'hostCall', 'global'].includes(k));",
    );
    expect(s).toEqual({ status: "succeeded", result: [] });
  });

  it("dynamic import() cannot load host modules", async () => {
    const s = await runScript("const fs = await import('node:fs'); return fs.readFileSync('/etc/hostname', 'utf8');");
    expectRuntimeError(s, /could not load module 'node:fs'/);
  });

  it("the itx bridge cannot be rebound to reach the host", async () => {
    const s = await runScript("itx.chat = { sendMessage: () => 'x' }; return Object.isFrozen(itx.chat) && typeof hostCall;");
    // `itx` members are frozen (the assignment fails in strict module code or is ignored); the
    // raw bridge function was only ever an argument of the bootstrap, never a global.
    expect(s.status === "succeeded" ? s.result : s.status === "failed" ? s.error : undefined).toMatch(/^(undefined|TypeError.*)$/);
  });

  it("a memory bomb is stopped without taking the host down", async () => {
    const s = await runScript("const a = []; while (true) a.push({ n: a.length, pad: [1, 2, 3, 4, 5, 6, 7, 8] });");
    expect(s.status).toBe("failed");
    if (s.status === "failed") expect(["runtime", "deadline"]).toContain(s.failureKind);
  });
});
