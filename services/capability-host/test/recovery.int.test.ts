// Crash recovery with a real host process: the host is SIGKILLed after `script-run-started`
// (and after the body's side effect), a new host claims the redelivered work item, and the
// script settles `orphaned` — never re-run, so the side effect happened exactly once.

import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { waitFor } from "@agentrt/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { CapabilityHost } from "../src/index.ts";
import { eventsOf, type HostFixture, requestScript, silentLogger, startFixture, uniquePath, waitSettled } from "./harness.ts";

const HOST_MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));

let fx: HostFixture;
let child: ChildProcess | undefined;
beforeAll(async () => {
  fx = await startFixture({ startHost: false });
});
afterAll(async () => {
  if (child !== undefined && child.exitCode === null) child.kill("SIGKILL");
  await fx?.stop();
});

function startHostProcess(natsUrl: string): ChildProcess {
  return spawn(process.execPath, ["--import", "tsx", HOST_MAIN], {
    env: { ...process.env, NATS_URL: natsUrl, OPS_PORT: "0", PARTITION_COUNT: "4", SCRIPT_WORK_ACK_WAIT_MS: "2000", LOG_LEVEL: "warn" },
    stdio: ["ignore", "ignore", "pipe"],
  });
}

it("a host killed after started leaves an orphan that the next host settles as orphaned, never re-running it", async () => {
  child = startHostProcess(fx.server.url);
  const path = uniquePath("recovery");
  // Held open by itx calls until the host dies (a script awaiting what nothing settles is stopped at once).
  const code = 'await itx.chat.sendMessage("side effect ran");\nfor (;;) await itx.kv.get("hold");';
  const { executionId } = await requestScript(fx, path, code);

  // The body ran (its side effect is on the stream) after `started` was appended.
  await waitFor(async () => (await eventsOf(fx.store, path, "agents/web-message-sent")).length === 1, { timeoutMs: 30_000, what: "the side effect" });
  const [started] = await eventsOf(fx.store, path, "capability-host/script-run-started");
  expect(started?.payload).toEqual({ executionId });

  child.kill("SIGKILL");
  await new Promise((resolve) => child!.once("exit", resolve));

  // A new incarnation claims the redelivered item and settles without re-running.
  fx.host = await CapabilityHost.start({ nc: fx.nc, store: fx.hostStore, logger: silentLogger, ackWaitMs: 2_000 });
  await fx.host.consume();
  const settled = await waitSettled(fx.store, path, executionId, 30_000);
  expect(settled.payload.settlement).toEqual({
    status: "failed",
    error:
      "The capability host stopped while this script was running; it was NOT re-run. " +
      "It may have partially executed: inspect state before retrying.",
    failureKind: "orphaned",
    phase: "recovery",
    executionMayHaveOccurred: true,
    cancellation: "external-work-may-continue",
  });
  expect(await eventsOf(fx.store, path, "agents/web-message-sent")).toHaveLength(1);
  expect(await eventsOf(fx.store, path, "capability-host/script-run-started")).toHaveLength(1);

  // The new host serves fresh scripts normally.
  const next = await requestScript(fx, path, "return 'after recovery';");
  expect((await waitSettled(fx.store, path, next.executionId)).payload.settlement).toEqual({ status: "succeeded", result: "after recovery" });
});
