// Scenarios 1 and 1b end to end: every service as a real process on a real nats-server, the
// fake model, and the `repo` capability provider with 7 open pulls. Everything goes through
// the public HTTP API. The bodies the model receives must equal the fixtures' messages, with
// the stamps, offsets and the measured script duration taken from the live stream; and the
// API's "what the model saw" must equal what the model actually received, byte for byte.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import type { AgentEvent } from "@agentrt/contract";
import { PROTOCOL_PROMPT, formatDuration } from "@agentrt/agent-core";
import { userMessage, waitFor } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "../support/processes.ts";
import { type System, startSystem } from "../support/system.ts";

interface Fixture {
  events: Array<{ offset: number; type: string; payload: Record<string, unknown> }>;
  expect: { requests: Array<{ offset: number; messages: Array<{ role: string; content: string }> }> };
}
const fixtureDir = join(repoRoot, "..", "shared", "spec", "scenarios");
const birth = parse(readFileSync(join(fixtureDir, "1-birth.yaml"), "utf8")) as Fixture;
const script = parse(readFileSync(join(fixtureDir, "1b-script.yaml"), "utf8")) as Fixture;
const fixtureEvent = (fixture: Fixture, offset: number) => fixture.events.find((e) => e.offset === offset)!;
const PATH = "/agents/web/demo";

// The project's tagged prompt file: the ten sections of the fixture's birth batch (@10–@19).
const promptFile = birth.events
  .filter((e) => e.offset >= 10 && e.offset <= 19)
  .map((e) => `<section key="${e.payload.key as string}">\n${e.payload.content as string}\n</section>`)
  .join("\n\n");

const replies = [28, 33, 39].map((offset) => (fixtureEvent(offset < 30 ? birth : script, offset).payload.content as string));

let system: System;
beforeAll(async () => {
  system = await startSystem({
    reducers: 1,
    drivers: 1,
    hosts: 1,
    gateway: true,
    repoProvider: { openPulls: 7 },
    model: { replies: replies.map((text) => ({ text, tokensPerSecond: 400 })) },
  });
});
afterAll(async () => system?.stop());

async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${system.gatewayUrl}${path}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await response.json()) as T;
  if (!response.ok) throw new Error(`${method} ${path} → ${response.status}: ${JSON.stringify(json)}`);
  return json;
}
const enc = encodeURIComponent(PATH);
const events = async () => (await api<{ events: AgentEvent[] }>("GET", `/v1/streams/${enc}/events?fromOffset=1&limit=1000`)).events;
const userSays = (content: string) => api("POST", `/v1/streams/${enc}/events`, { events: [userMessage(content)] });

/** The fixture's messages with the protocol prompt, stamps, offsets and durations of the live run. */
function expected(messages: Array<{ role: string; content: string }>, substitutions: Array<[string, string]>) {
  return messages.map((m) => {
    let content = m.content === "$PROTOCOL_PROMPT" ? PROTOCOL_PROMPT : m.content;
    for (const [from, to] of substitutions) content = content.split(from).join(to);
    return { role: m.role, content };
  });
}

describe("scenario 1: birth to first reply", () => {
  it("the worker's birth reaction lands within the window and the model receives the fixture's request @26", async () => {
    await api("POST", "/v1/agents", { streamPath: PATH, promptFile, project: "demo" });
    await waitFor(async () => (await events()).some((e) => e.type === "agent/configured" && (e.payload as { config: { interpretResponses?: boolean } }).config.interpretResponses === false), {
      timeoutMs: 30_000,
    });
    const afterBirth = await events();
    const created = afterBirth.find((e) => e.type === "agent/created")!;
    const configured = afterBirth.find((e) => e.idempotencyKey?.endsWith("/configured") && e.idempotencyKey.startsWith("worker/"))!;
    // The worker reacts within seconds, long before the 60 s birth window closes, and no
    // request is made before it does.
    expect(Date.parse(configured.createdAt) - Date.parse(created.createdAt)).toBeLessThan(10_000);
    expect(afterBirth.some((e) => e.type === "agent/llm-request-requested")).toBe(false);

    await userSays("hi — what can you do?");
    const [received] = await system.model.waitForRequests(1, 60_000);
    const stream = await events();
    const request = stream.find((e) => e.type === "agent/llm-request-requested")!;
    const body = received!.body as { model: string; messages: unknown[]; stream: boolean };
    expect(body.stream).toBe(true);
    expect(body.messages).toEqual(
      expected(birth.expect.requests[0]!.messages, [["Requested at: 2026-08-24T16:41:04.500Z", `Requested at: ${request.createdAt}`]]),
    );
    // What the API says the model saw is exactly what it received.
    const saw = await api<{ messages: unknown[] }>("GET", `/v1/agents/${enc}/requests/${request.offset}`);
    expect(saw.messages).toEqual(body.messages);
    await waitFor(async () => (await events()).some((e) => e.type === "agent/llm-request-settled"), { timeoutMs: 30_000 });
    // "return" ends the turn: no script for the first reply.
    expect((await events()).some((e) => e.type === "capability-host/script-run-requested")).toBe(false);
  });
});

describe("scenario 1b: a codemode round trip", () => {
  it("runs the script against the repo provider and the next request carries its result with the measured duration", async () => {
    await userSays("how many open PRs do we have?");
    const requests = await system.model.waitForRequests(3, 120_000).catch(async (error: unknown) => {
      process.stdout.write(`STREAM ${JSON.stringify((await events()).map((e) => [e.offset, e.type, e.idempotencyKey ?? "", e.type.startsWith("capability-host/") ? e.payload : ""]))}\n`);
      process.stdout.write(system.processes.all.map((p) => `--- ${p.name}\n${p.logs().split("\n").filter((l) => /"level":(40|50|60)/.test(l)).slice(-10).join("\n")}`).join("\n") + "\n");
      throw error;
    });
    const stream = await events();
    const stamps = stream.filter((e) => e.type === "agent/llm-request-requested");
    const scriptRequested = stream.find((e) => e.type === "capability-host/script-run-requested")!;
    const scriptSettled = stream.find((e) => e.type === "capability-host/script-run-settled")!;
    const rendered = stream.find((e) => e.idempotencyKey === `agent/render-script-result@${scriptSettled.offset}`)!;
    const assistant = stream.filter((e) => e.type === "agents/context-added" && (e.payload as { role: string }).role === "assistant");

    expect(scriptRequested.payload).toMatchObject({ code: 'return (await itx.repo.listPulls({ state: "open" })).length;', executionId: `agent-output:${assistant[1]!.offset}` });
    expect(scriptSettled.payload).toEqual({ executionId: `agent-output:${assistant[1]!.offset}`, settlement: { status: "succeeded", result: 7 } });
    const duration = formatDuration(Math.max(0, Date.parse(scriptSettled.createdAt) - Date.parse(scriptRequested.createdAt)));
    expect((rendered.payload as { content: string }).content).toBe(
      `Your script returned (in ${duration}):\n\`\`\`json\n7\n\`\`\`\nThis result is available to your next script as \`results[0].data\` (the preamble \`results\` array, newest first).`,
    );

    const live: Array<[string, string]> = [
      ["Requested at: 2026-08-24T16:41:04.500Z", `Requested at: ${stamps[0]!.createdAt}`],
      ["Requested at: 2026-08-24T16:51:10.250Z", `Requested at: ${stamps[1]!.createdAt}`],
      ["Requested at: 2026-08-24T16:51:16.300Z", `Requested at: ${stamps[2]!.createdAt}`],
      ["@37 actor=script:\"agent-output:33\"", `@${rendered.offset} actor=script:"agent-output:${assistant[1]!.offset}"`],
      ["(in 1.8s)", `(in ${duration})`],
    ];
    expect((requests[1]!.body as { messages: unknown[] }).messages).toEqual(expected(script.expect.requests[0]!.messages, live));
    expect((requests[2]!.body as { messages: unknown[] }).messages).toEqual(expected(script.expect.requests[1]!.messages, live));
    for (const [i, stamp] of stamps.entries()) {
      const saw = await api<{ messages: unknown[] }>("GET", `/v1/agents/${enc}/requests/${stamp.offset}`);
      expect(saw.messages).toEqual((requests[i]!.body as { messages: unknown[] }).messages);
    }
    // "We have 7 open PRs." ends the turn: exactly one script in the whole conversation.
    await waitFor(async () => (await events()).filter((e) => e.type === "agent/llm-request-settled").length === 3, { timeoutMs: 30_000 });
    expect((await events()).filter((e) => e.type === "capability-host/script-run-requested")).toHaveLength(1);
  });
});
