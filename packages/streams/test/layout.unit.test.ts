// The on-wire layout is a compatibility surface (other languages and older versions read it):
// subjects, the record head readers locate offsets with, and the prefix filters of listStreams.

import { describe, expect, it } from "vitest";
import { decodeRecordJson, ephemeralEvents, ephemeralEventsJson, prepareBatch, readRecordHead, recordJson } from "../src/batch.ts";
import { durableSubject, ephemeralSubject, pathOfSubject, prefixFilter } from "../src/jetstream/subjects.ts";
import { note } from "./event-store-suite.ts";

const scheme = { durablePrefix: "ev", ephemeralPrefix: "eph" };
const encode = (s: string) => new TextEncoder().encode(s);

describe("subjects", () => {
  it("maps a path to ev.<partition>.<segments> and back, with a parallel live-lane subject", () => {
    expect(durableSubject(scheme, 7, "/agents/web/demo-1")).toBe("ev.7.agents.web.demo-1");
    expect(ephemeralSubject(scheme, 7, "/agents/web/demo-1")).toBe("eph.7.agents.web.demo-1");
    expect(pathOfSubject(scheme, "ev.7.agents.web.demo-1")).toBe("/agents/web/demo-1");
    expect(pathOfSubject(scheme, "other.7.a")).toBeUndefined();
  });

  it("filters listStreams by whole segments server-side, leaving partial ones to the client", () => {
    expect(prefixFilter(scheme, undefined)).toBe("ev.>");
    expect(prefixFilter(scheme, "/")).toBe("ev.>");
    expect(prefixFilter(scheme, "/agents/")).toBe("ev.*.agents.>");
    expect(prefixFilter(scheme, "/agents/we")).toBe("ev.*.agents.>");
    expect(prefixFilter(scheme, "/agen")).toBe("ev.>");
  });
});

describe("batch records", () => {
  it("lead with the first offset and count, and round-trip the events", () => {
    const batch = prepareBatch("/a/b", [note("x", "k1"), note("y")]);
    const json = recordJson(batch.streamPath, 41, 2, "2026-01-01T00:00:00.000Z", batch.eventsJson.slice(1, -1));
    expect(readRecordHead(encode(json))).toEqual({ first: 41, count: 2, path: "/a/b" });
    expect(decodeRecordJson(encode(json))).toEqual({
      v: 1,
      first: 41,
      n: 2,
      at: "2026-01-01T00:00:00.000Z",
      path: "/a/b",
      events: [
        { type: "agents/context-added", payload: { role: "user", content: "x" }, idempotencyKey: "k1" },
        { type: "agents/context-added", payload: { role: "user", content: "y" } },
      ],
    });
    expect(Buffer.byteLength(json)).toBeLessThanOrEqual(batch.bytes);
    expect(readRecordHead(encode("not a record"))).toBeUndefined();
  });

  it("hold the events' JSON exactly as stored, and measure each event in UTF-8 bytes", () => {
    const events = [note("é and 🙂", "k1"), note('"quoted"\n')];
    const batch = prepareBatch("/a/b", events);
    expect(batch.eventsJson).toBe(JSON.stringify(batch.inputs));
    // An event of exactly the limit passes; one byte more (a two-byte character for a one-byte one) does not.
    const size = Buffer.byteLength(JSON.stringify(note("aé")));
    expect(prepareBatch("/a/b", [note("a"), note("aé")], size).inputs).toHaveLength(2);
    expect(() => prepareBatch("/a/b", [note("a"), note("éé")], size)).toThrow(/events\[1\] \(agents\/context-added\) takes \d+ bytes/);
  });

  it("carry live-lane events as their JSON, made from the batch's JSON without encoding the payloads again", () => {
    const chunk = (sequence: number, text: string, idempotencyKey?: string) => ({
      type: "agent/llm-response-chunks",
      payload: { chunks: [{ choices: [{ delta: { content: text } }] }], llmRequestOffset: 3, sequence },
      ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
    });
    const batch = prepareBatch("/agents/web/demo-1", [chunk(0, 'é 🙂 "quoted"\n'), chunk(1, "plain", "k1")]);
    const json = ephemeralEventsJson(batch, 41, "2026-01-01T00:00:00.000Z");
    // Byte for byte what encoding the live events would give, and they parse back to them.
    expect(json).toBe(JSON.stringify(ephemeralEvents(batch, 41, "2026-01-01T00:00:00.000Z")));
    expect(JSON.parse(json)).toEqual([
      { streamPath: "/agents/web/demo-1", offset: 41, createdAt: "2026-01-01T00:00:00.000Z", ...chunk(0, 'é 🙂 "quoted"\n'), ephemeral: true },
      { streamPath: "/agents/web/demo-1", offset: 41, createdAt: "2026-01-01T00:00:00.000Z", ...chunk(1, "plain", "k1"), ephemeral: true },
    ]);
  });
});
