// "Is this request still open?", given / when / then: given the events on a stream, when a
// driver (or the gateway, or renderRequestAt) asks about request R at some time, then it is
// open, expired, settled or was never accepted — one decision for every caller.

import { describe, expect, it } from "vitest";
import { acceptedRequest, foldAgentEvents, initialAgentState, REQUEST_NOT_ACCEPTED_REASON, requestStatus } from "../src/index.ts";
import { PATH, TestStream } from "./support/stream.ts";

function opened() {
  const s = new TestStream();
  const events = [s.created(), s.user("hi"), s.requested()];
  return { s, events, R: 3, expiresAtMs: Date.parse((events[2]!.payload as { expiresAt: string }).expiresAt) };
}

describe("requestStatus", () => {
  it("an accepted, unsettled request before its expiry is open, with the state folded through it", () => {
    const { events, R, s } = opened();
    const status = requestStatus(events, R, { nowMs: s.now });
    expect(status.kind).toBe("open");
    if (status.kind !== "open") return;
    expect(status.request.requestedAtOffset).toBe(R);
    expect(status.state.lastFoldedOffset).toBe(R);
  });

  it("events after the request do not change what is rendered (the prefix decides)", () => {
    const { events, R, s } = opened();
    const later = [...events, s.user("and another thing")];
    const a = requestStatus(events, R, { nowMs: s.now });
    const b = requestStatus(later, R, { nowMs: s.now });
    expect(b).toEqual(a);
  });

  it("is settled once any settlement names it, whatever came before", () => {
    const { events, R, s } = opened();
    expect(requestStatus([...events, s.succeeded(R)], R, { nowMs: s.now })).toEqual({ kind: "settled" });
  });

  it("is expired at and after its expiresAt while unsettled", () => {
    const { events, R, expiresAtMs } = opened();
    expect(requestStatus(events, R, { nowMs: expiresAtMs - 1 }).kind).toBe("open");
    expect(requestStatus(events, R, { nowMs: expiresAtMs }).kind).toBe("expired");
  });

  it("is not open when the offset is not a requested event; not visible when the events do not reach it", () => {
    const { events, s } = opened();
    expect(requestStatus(events, 2, { nowMs: s.now })).toMatchObject({ kind: "not-open", reason: expect.stringContaining("not an agent/llm-request-requested") });
    // A read that ends before the request proves nothing about it (the driver tries the item again).
    expect(requestStatus(events, 9, { nowMs: s.now })).toEqual({ kind: "not-visible", lastOffset: events.at(-1)?.offset });
  });

  it("is not open when the fold ignored it (no trigger pending)", () => {
    const s = new TestStream();
    const events = [s.created(), s.requested()];
    expect(requestStatus(events, 2, { nowMs: s.now })).toEqual({ kind: "not-open", reason: REQUEST_NOT_ACCEPTED_REASON });
  });

  it("is not open when another request was already open", () => {
    const s = new TestStream();
    const events = [s.created(), s.user("hi"), s.requested(), s.user("more"), s.requested()];
    expect(requestStatus(events, 5, { nowMs: s.now })).toEqual({ kind: "not-open", reason: REQUEST_NOT_ACCEPTED_REASON });
  });
});

describe("acceptedRequest", () => {
  it("names the request the fold accepted through R, and nothing for an ignored one", () => {
    const { events, R } = opened();
    const through = foldAgentEvents(initialAgentState(PATH), events);
    expect(acceptedRequest(through, R)?.requestedAtOffset).toBe(R);
    expect(acceptedRequest(through, R - 1)).toBeNull();
    const s = new TestStream();
    expect(acceptedRequest(foldAgentEvents(initialAgentState(PATH), [s.created(), s.requested()]), 2)).toBeNull();
  });
});
