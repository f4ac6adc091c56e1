// The quickstart's choice of NATS (scripts/stack/nats.ts) prints where it connects, but never the
// credentials a NATS_URL may carry: not when that NATS answers, not when it does not.

import { createServer, type Server } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freeLoopbackPort } from "@agentrt/testing";
import { afterAll, afterEach, beforeAll, expect, it, vi } from "vitest";
import { planNats } from "../../scripts/stack/nats.ts";

let dir: string;
let listener: Server;
let port: number;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "agentrt-nats-plan-"));
  port = await freeLoopbackPort();
  listener = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => listener.listen(port, "127.0.0.1", resolve));
});
afterAll(async () => {
  await new Promise((resolve) => listener.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});
afterEach(() => vi.restoreAllMocks());

function captureStdout(): () => string {
  const lines: string[] = [];
  vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  });
  return () => lines.join("");
}

it("given a NATS_URL with a user and password that answers, when the quickstart plans NATS, then it says where without the password", async () => {
  const printed = captureStdout();
  const url = `nats://ops:s3cret-pw@127.0.0.1:${port},nats://tok3n-value@127.0.0.1:${port}`;
  const plan = await planNats(dir, { NATS_URL: url });
  expect(plan.url, "the services still get the credentials").toBe(url);
  expect(plan.child).toBeUndefined();
  expect(printed()).toContain(`using NATS at nats://***@127.0.0.1:${port},nats://***@127.0.0.1:${port}`);
  expect(printed()).not.toMatch(/s3cret-pw|tok3n-value|ops:/);
});

it("given a NATS_URL with a password that does not answer, when the quickstart plans NATS, then the error names it without the password", async () => {
  const printed = captureStdout();
  const silent = await freeLoopbackPort();
  const error = await planNats(dir, { NATS_URL: `nats://ops:s3cret-pw@127.0.0.1:${silent}` }).then(() => undefined, (e: Error) => e.message);
  expect(error).toBe(`NATS_URL=nats://***@127.0.0.1:${silent} does not answer`);
  expect(printed()).not.toContain("s3cret-pw");
});
