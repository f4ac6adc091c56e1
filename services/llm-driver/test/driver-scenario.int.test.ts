// Scenario 1 ("birth to first reply"): the stream of fixture 1-birth up to the first request,
// appended to a live JetStream store, makes the driver send the fake model exactly the
// fixture's messages. Offsets are dense in a live store (the fixture's are the seed's), which
// the render never shows for these items; the request stamp carries the store's own
// createdAt, and $PROTOCOL_PROMPT is the exported constant.

import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { PROTOCOL_PROMPT } from "@agentrt/agent-core";
import { parse as parseYaml } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { append, type DriverEnv, publishLlmWork, startDriverEnv, waitForEvent } from "./driver-harness.ts";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const fixtureFile = join(repoRoot, "../shared/spec/scenarios/1-birth.yaml");

interface Fixture {
  streamPath: string;
  events: { offset: number; type: string; payload: Record<string, unknown>; idempotencyKey?: string }[];
  expect: { requests: { offset: number; model: string; messages: { role: string; content: string }[] }[] };
}

let env: DriverEnv;
beforeAll(async () => {
  env = await startDriverEnv();
  await env.startDriver();
});
afterAll(async () => env?.close());

describe("scenario 1: the first turn's request body", () => {
  it("equals the fixture's messages", async () => {
    expect(existsSync(fixtureFile), `fixture missing: ${fixtureFile}`).toBe(true);
    const fixture = parseYaml(readFileSync(fixtureFile, "utf8")) as Fixture;
    const expected = fixture.expect.requests[0]!;
    const before = fixture.events.filter((e) => e.offset < expected.offset);
    const requestedEvent = fixture.events.find((e) => e.offset === expected.offset)!;
    expect(requestedEvent.type).toBe("agent/llm-request-requested");

    const path = fixture.streamPath;
    await append(
      env.store,
      path,
      before.map((e) => ({ type: e.type, payload: e.payload, ...(e.idempotencyKey ? { idempotencyKey: e.idempotencyKey } : {}) }) as never),
    );
    // The fixture's expiresAt is in the past; it is not part of the render.
    const [request] = await append(env.store, path, [
      { type: "agent/llm-request-requested", payload: { ...requestedEvent.payload, expiresAt: new Date(Date.now() + 600_000).toISOString() } } as never,
    ]);
    env.model.script({ text: "Hi! I'm your project's agent.\n<codemode status=\"Idle\">return</codemode>" });
    await publishLlmWork(env, path, request!.offset);
    await waitForEvent(env.store, path, "agent/llm-request-settled");

    const body = env.model.requests.at(-1)?.body as { model: string; messages: { role: string; content: string }[]; prompt_cache_key: string };
    const stamp = `Requested at: ${request!.createdAt}`;
    const wanted = expected.messages.map((m) =>
      m.content === "$PROTOCOL_PROMPT" ? { ...m, content: PROTOCOL_PROMPT } : m.content.startsWith("Requested at: ") ? { ...m, content: stamp } : m,
    );
    expect(body.messages).toEqual(wanted);
    // Everything but the stamp's time is the fixture's, byte for byte.
    expect(body.messages.slice(1, -1)).toEqual(expected.messages.slice(1, -1));
    expect(expected.messages.at(-1)?.content).toMatch(/^Requested at: /);
    expect(body.model).toBe(expected.model.split("/")[1]);
    expect(body.prompt_cache_key).toBe(path);
  });
});
