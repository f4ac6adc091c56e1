// The HTTP API end to end over a real store: every route, its success shape, and the bad
// inputs the issue names (malformed JSON, unknown type, invalid field, bad path, oversized
// body, offset out of range, a mixed batch that must commit nothing).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openTestStore, type TestStore } from "./support/store.ts";
import { startTestGateway, type TestGateway } from "./support/gateway-harness.ts";
import { enc, http } from "./support/http.ts";
import { collectLive, userMessage, waitFor } from "@agentrt/testing";
import { JetStreamEventStore } from "@agentrt/streams/jetstream";

let ts: TestStore;
let gw: TestGateway;
const born = { type: "agent/created", payload: {} };

beforeAll(async () => {
  ts = await openTestStore();
  gw = await startTestGateway({ store: ts.store, devMode: true, maxBodyBytes: 64 * 1024 });
});
afterAll(async () => {
  await gw?.close();
  await ts?.close();
});

let n = 0;
const fresh = () => `/agents/api/t${++n}-${Date.now().toString(36)}`;

async function seed(path: string, count: number): Promise<void> {
  const events = [born, ...Array.from({ length: count - 1 }, (_, i) => userMessage(`m${i + 1}`))];
  const res = await http(gw.url, "POST", `/v1/streams/${enc(path)}/events`, { body: { events } });
  expect(res.status).toBe(200);
}

describe("append and read", () => {
  it("commits a batch with consecutive offsets and reads it back in pages", async () => {
    const path = fresh();
    const res = await http(gw.url, "POST", `/v1/streams/${enc(path)}/events`, { body: { events: [born, userMessage("a"), userMessage("b")] } });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe("committed");
    expect(res.body.events.map((e: { offset: number }) => e.offset)).toEqual([1, 2, 3]);
    const page1 = await http(gw.url, "GET", `/v1/streams/${enc(path)}/events?fromOffset=1&limit=2`);
    expect(page1.status).toBe(200);
    expect(page1.body.events.map((e: { offset: number }) => e.offset)).toEqual([1, 2]);
    expect(page1.body.nextOffset).toBe(3);
    expect(page1.body.lastOffset).toBe(3);
    const page2 = await http(gw.url, "GET", `/v1/streams/${enc(path)}/events?fromOffset=${page1.body.nextOffset}&limit=2`);
    expect(page2.body.events.map((e: { payload: { content: string } }) => e.payload.content)).toEqual(["b"]);
    expect(page2.body.nextOffset).toBe(4);
  });

  it("pages past events this version cannot read (a newer writer's): nextOffset moves on, never the same empty page again", async () => {
    const path = fresh();
    await seed(path, 2);
    // A record @3 as a newer writer would store it: one event of a type this gateway does not know
    const subject = (ts.store as JetStreamEventStore).subjectOf(path);
    const record = { v: 1, first: 3, n: 1, at: new Date().toISOString(), path, events: [{ type: "agent/teleported", payload: {} }] };
    // (a core publish: the stream stores it all the same)
    ts.nc.publish(subject, new TextEncoder().encode(JSON.stringify(record)));
    await ts.nc.flush();
    await waitFor(async () => (await ts.store.lastOffset(path)) === 3 || undefined, { what: "the record to be stored" });
    const tail = await http(gw.url, "GET", `/v1/streams/${enc(path)}/events?fromOffset=3`);
    expect(tail.status).toBe(200);
    expect([tail.body.events, tail.body.nextOffset, tail.body.lastOffset]).toEqual([[], 4, 3]);
    const sent = await http(gw.url, "POST", `/v1/streams/${enc(path)}/events`, { body: { events: [userMessage("after it")] } });
    expect(sent.body.events[0].offset).toBe(4);
    const page = await http(gw.url, "GET", `/v1/streams/${enc(path)}/events?fromOffset=1`);
    expect(page.body.events.map((e: { offset: number }) => e.offset)).toEqual([1, 2, 4]);
    expect(page.body.nextOffset).toBe(5);
    // And a live subscription from the unreadable offset delivers what follows it
    const live = await collectLive("sse", `${gw.url}/v1/streams/${enc(path)}/subscribe?fromOffset=3`, (frames) => frames.length >= 1);
    expect(live.messages.map((f) => f.data.offset)).toEqual([4]);
  });

  it("returns the original event for a re-sent idempotency key and commits nothing", async () => {
    const path = fresh();
    await seed(path, 1);
    const keyed = { ...userMessage("once"), idempotencyKey: "client/1" };
    const first = await http(gw.url, "POST", `/v1/streams/${enc(path)}/events`, { body: { events: [keyed] } });
    const again = await http(gw.url, "POST", `/v1/streams/${enc(path)}/events`, { body: { events: [keyed] } });
    expect(first.body.status).toBe("committed");
    expect(again.status).toBe(200);
    expect(again.body.status).toBe("duplicate");
    expect(again.body.events[0].offset).toBe(first.body.events[0].offset);
    expect(await ts.store.lastOffset(path)).toBe(2);
  });

  it("409 when expectedLastOffset does not match", async () => {
    const path = fresh();
    await seed(path, 2);
    const res = await http(gw.url, "POST", `/v1/streams/${enc(path)}/events`, { body: { events: [userMessage("x")], expectedLastOffset: 1 } });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("conflict");
    expect(await ts.store.lastOffset(path)).toBe(2);
  });
});

describe("bad input never commits", () => {
  it("400 on malformed JSON", async () => {
    const path = fresh();
    const res = await http(gw.url, "POST", `/v1/streams/${enc(path)}/events`, { rawBody: '{"events": [' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("invalid_request");
    expect(res.body.error.message).toMatch(/not valid JSON/);
  });

  it("400 on a key given twice in one object, naming it and where; nothing committed", async () => {
    const path = fresh();
    await seed(path, 2);
    const rawBody = '{"events":[{"type":"agents/context-added","payload":{"role":"user","content":"what a proxy read","content":"what would be stored"}}]}';
    const res = await http(gw.url, "POST", `/v1/streams/${enc(path)}/events`, { rawBody });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("invalid_request");
    expect(res.body.error.message).toBe('The request body gives the key "content" twice in one object (at events[0].payload.content); send each key once.');
    expect(await ts.store.lastOffset(path)).toBe(2);
  });

  it("400 on a body that is not UTF-8, naming the byte; nothing committed (not stored as U+FFFD)", async () => {
    const path = fresh();
    await seed(path, 2);
    const bytes = Buffer.concat([Buffer.from('{"events":[{"type":"agents/context-added","payload":{"role":"user","content":"caf'), Buffer.from([0xe9]), Buffer.from('"}}]}')]);
    const res = await fetch(`${gw.url}/v1/streams/${enc(path)}/events`, { method: "POST", headers: { "content-type": "application/json" }, body: bytes });
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(res.status).toBe(400);
    expect(body.error.code).toBe("invalid_request");
    expect(body.error.message).toBe(`The request body is not UTF-8: the bytes at offset ${bytes.indexOf(0xe9)} do not encode a character (JSON bodies are UTF-8).`);
    expect(await ts.store.lastOffset(path)).toBe(2);
  });

  it("400 on an unknown event type, naming it", async () => {
    const path = fresh();
    const res = await http(gw.url, "POST", `/v1/streams/${enc(path)}/events`, { body: { events: [{ type: "agent/teleported", payload: {} }] } });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("unknown_event_type");
    expect(res.body.error.message).toContain("agent/teleported");
    expect(await ts.store.lastOffset(path)).toBe(0);
  });

  it("400 on an invalid payload field, naming the type, the field and the rule", async () => {
    const path = fresh();
    const res = await http(gw.url, "POST", `/v1/streams/${enc(path)}/events`, {
      body: { events: [{ type: "agents/context-added", payload: { role: "wizard", content: "hi" } }] },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("invalid_payload");
    expect(res.body.error.message).toContain("agents/context-added");
    expect(res.body.error.details.issues[0].path).toBe("events[0].payload.role");
  });

  it("a batch mixing valid and invalid events commits nothing", async () => {
    const path = fresh();
    await seed(path, 2);
    const res = await http(gw.url, "POST", `/v1/streams/${enc(path)}/events`, {
      body: { events: [userMessage("fine"), userMessage("also fine"), { type: "agents/context-added", payload: { role: "user" } }] },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.details.issues[0].path).toBe("events[2].payload.content");
    expect(await ts.store.lastOffset(path)).toBe(2);
    const read = await http(gw.url, "GET", `/v1/streams/${enc(path)}/events`);
    expect(read.body.events).toHaveLength(2);
  });

  it("400 on a bad stream path, naming the segment rule", async () => {
    const res = await http(gw.url, "POST", `/v1/streams/${enc("/agents/no spaces")}/events`, { body: { events: [born] } });
    expect(res.status).toBe(400);
    expect(res.body.error.details.issues[0].path).toBe("path.streamPath");
    expect(res.body.error.message).toMatch(/letters, digits/);
    const relative = await http(gw.url, "GET", `/v1/streams/${enc("agents/x")}/events`);
    expect(relative.status).toBe(400);
  });

  it("400 on a body that is not the append shape (events missing, unknown field)", async () => {
    const path = fresh();
    const res = await http(gw.url, "POST", `/v1/streams/${enc(path)}/events`, { body: { evnts: [] } });
    expect(res.status).toBe(400);
    const paths = res.body.error.details.issues.map((i: { path: string }) => i.path);
    expect(paths).toContain("body.events");
  });

  it("413 on an oversized body", async () => {
    const path = fresh();
    const big = userMessage("x".repeat(70 * 1024));
    const res = await http(gw.url, "POST", `/v1/streams/${enc(path)}/events`, { body: { events: [big] } });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe("payload_too_large");
    expect(await ts.store.lastOffset(path)).toBe(0);
  });

  it("416 when reading past the end; 400 for offset 0", async () => {
    const path = fresh();
    await seed(path, 3);
    const past = await http(gw.url, "GET", `/v1/streams/${enc(path)}/events?fromOffset=9`);
    expect(past.status).toBe(416);
    expect(past.body.error.code).toBe("offset_out_of_range");
    const end = await http(gw.url, "GET", `/v1/streams/${enc(path)}/events?fromOffset=4`);
    expect(end.status).toBe(200);
    expect(end.body.events).toEqual([]);
    const zero = await http(gw.url, "GET", `/v1/streams/${enc(path)}/events?fromOffset=0`);
    expect(zero.status).toBe(400);
    expect(zero.body.error.details.issues[0].path).toBe("query.fromOffset");
    const sse = await http(gw.url, "GET", `/v1/streams/${enc(path)}/subscribe?fromOffset=10`);
    expect(sse.status).toBe(416);
  });

  it("400 for an integer not written in decimal digits (hex, exponent, fraction, padding), where a coercion read 0x10 as 16", async () => {
    const path = fresh();
    await seed(path, 3);
    for (const written of ["0x2", "1e0", "1.0", "%201", "%2B1", ""]) {
      for (const query of [`fromOffset=${written}`, `limit=${written}`]) {
        const res = await http(gw.url, "GET", `/v1/streams/${enc(path)}/events?${query}`);
        expect(res.status, query).toBe(400);
        expect(res.body.error.details.issues[0].path, query).toBe(`query.${query.split("=")[0]}`);
      }
    }
    const request = await http(gw.url, "GET", `/v1/agents/${enc(path)}/requests/0x2`);
    expect(request.status).toBe(400);
    const decimal = await http(gw.url, "GET", `/v1/streams/${enc(path)}/events?fromOffset=2&limit=1`);
    expect(decimal.status).toBe(200);
    expect(decimal.body.events.map((e: { offset: number }) => e.offset)).toEqual([2]);
  });

  it("400 naming a query parameter given twice, on reads and live streams alike (which one counts is never guessed)", async () => {
    const path = fresh();
    await seed(path, 3);
    for (const route of ["events", "subscribe"]) {
      const twice = await http(gw.url, "GET", `/v1/streams/${enc(path)}/${route}?fromOffset=1&limit=5&fromOffset=3`);
      expect(twice.status, route).toBe(400);
      expect(twice.body.error.details.issues).toEqual([{ path: "query.fromOffset", message: "given 2 times; give it once" }]);
    }
  });

  it("404 for an unknown route, 405 for a wrong method", async () => {
    expect((await http(gw.url, "GET", "/v1/nothing")).status).toBe(404);
    const wrong = await http(gw.url, "DELETE", `/v1/streams/${enc("/a/b")}/events`);
    expect(wrong.status).toBe(405);
  });
});

describe("live subscriptions", () => {
  it("SSE replays history then live, id = offset, and Last-Event-ID resumes with no gap or duplicate", async () => {
    const path = fresh();
    await seed(path, 3);
    const url = `${gw.url}/v1/streams/${enc(path)}/subscribe?fromOffset=2`;
    const first = collectLive("sse", url, (f) => f.length >= 4);
    // Live events appended while subscribed arrive after the history.
    await waitForSubscriberThenAppend(path, [userMessage("live-1"), userMessage("live-2")]);
    const { messages: frames } = await first;
    expect(frames.map((f) => f.id)).toEqual(["2", "3", "4", "5"]);
    expect(frames.map((f) => f.data.offset)).toEqual([2, 3, 4, 5]);
    const resumed = await collectLive("sse", url, (f) => f.length >= 1, { headers: { "last-event-id": "4" } });
    expect(resumed.messages.map((f) => f.data.offset)).toEqual([5]);
  });

  it("SSE with ephemeral=1 also delivers live-lane chunks, without an id", async () => {
    const path = fresh();
    await seed(path, 1);
    const chunks = { type: "agent/llm-response-chunks", payload: { chunks: [{ choices: [{ delta: { content: "hi" } }] }], llmRequestOffset: 1, sequence: 0 } };
    // The live lane is not replayed: publish once the subscriber has seen the history.
    let published: Promise<void> | undefined;
    const { messages: frames } = await collectLive("sse", `${gw.url}/v1/streams/${enc(path)}/subscribe?ephemeral=1`, (f) => f.some((x) => x.data.ephemeral === true), {
      onMessage: (_, f) => {
        // The live lane is the driver's to write (the API refuses it), so it goes through the store.
        if (f.length === 1) published = ts.store.append(path, [chunks]).then(() => undefined);
      },
    });
    await published;
    const live = frames.find((f) => f.data.ephemeral === true)!;
    expect(live.id).toBeUndefined();
    expect(live.data.type).toBe("agent/llm-response-chunks");
    expect(await ts.store.lastOffset(path)).toBe(1);
  });

  it("WebSocket delivers the same events and resumes from fromOffset", async () => {
    const path = fresh();
    await seed(path, 4);
    const wsUrl = gw.url.replace("http", "ws");
    const all = await collectLive("ws", `${wsUrl}/v1/streams/${enc(path)}/ws`, (e) => e.length >= 4);
    expect(all.messages.map((e) => e.data.offset)).toEqual([1, 2, 3, 4]);
    const resumed = collectLive("ws", `${wsUrl}/v1/streams/${enc(path)}/ws?fromOffset=4`, (e) => e.length >= 2);
    await waitForSubscriberThenAppend(path, [userMessage("after")]);
    expect((await resumed).messages.map((e) => e.data.offset)).toEqual([4, 5]);
    const bad = await collectLive("ws", `${wsUrl}/v1/streams/${enc(path)}/ws?fromOffset=99`, () => true);
    expect(bad.status).toBe(416);
  });
});

describe("state and list", () => {
  it("returns the folded state and lists agents under a prefix with summaries", async () => {
    const path = fresh();
    await seed(path, 2);
    // The summary is the reducer's and scripts' to write (the API refuses it).
    await ts.store.append(path, [{ type: "agent/summary-updated", payload: { title: "Demo agent", activity: "Reading", waitingFor: "user_input" } }]);
    const state = await http(gw.url, "GET", `/v1/agents/${enc(path)}/state`);
    expect(state.status).toBe(200);
    expect(state.body.lastOffset).toBe(3);
    expect(state.body.state.birthCertificate).toEqual({ createdAtOffset: 1 });
    expect(state.body.state.summary.title).toBe("Demo agent");
    const list = await http(gw.url, "GET", `/v1/agents?prefix=${encodeURIComponent("/agents/api")}`);
    expect(list.status).toBe(200);
    const entry = list.body.agents.find((a: { streamPath: string }) => a.streamPath === path);
    expect(entry).toMatchObject({ title: "Demo agent", activity: "Reading", waitingFor: "user_input", lastOffset: 3, paused: false });
    const missing = await http(gw.url, "GET", `/v1/agents/${enc("/agents/api/none")}/state`);
    expect(missing.status).toBe(404);
  });
});

async function waitForSubscriberThenAppend(path: string, events: unknown[]): Promise<void> {
  // The subscription is opened by the request above; appending right away is still correct
  // (history-then-live has no gap), which is exactly what these tests check.
  const res = await http(gw.url, "POST", `/v1/streams/${enc(path)}/events`, { body: { events } });
  expect(res.status).toBe(200);
}
