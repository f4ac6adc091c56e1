// The connection cap's bookkeeping (http/connection-cap.ts): every dropped connection is counted,
// and the warning names how many were dropped, at most once a minute, so a flood does not become
// a flood of log lines.

import { EventEmitter } from "node:events";
import type { Server } from "node:net";
import { describe, expect, it } from "vitest";
import { capConnections } from "../src/http/connection-cap.ts";

describe("capConnections", () => {
  it("given a listener at its cap, when connections keep arriving, then each is counted and the warning comes once a minute with the count since the last", () => {
    const server = Object.assign(new EventEmitter(), { maxConnections: 0 }) as unknown as Server;
    const warnings: Record<string, unknown>[] = [];
    let dropped = 0;
    let now = 1_000_000;
    const log = { warn: (fields: Record<string, unknown>) => warnings.push(fields) } as unknown as Parameters<typeof capConnections>[1]["log"];
    capConnections(server, { max: 3, listener: "grpc", log, onDrop: () => dropped++, nowMs: () => now });
    expect(server.maxConnections).toBe(3);

    for (let i = 0; i < 5; i++) server.emit("drop");
    expect(dropped).toBe(5);
    expect(warnings).toEqual([{ listener: "grpc", maxConnections: 3, dropped: 1 }]);

    now += 59_000;
    server.emit("drop");
    expect(warnings).toHaveLength(1);
    now += 1_000;
    server.emit("drop");
    expect(dropped).toBe(7);
    expect(warnings[1]).toEqual({ listener: "grpc", maxConnections: 3, dropped: 6 });
  });

  it("given a listener that fails to accept a connection (out of file descriptors), when it says so, then it is logged and the process goes on", () => {
    const server = Object.assign(new EventEmitter(), { maxConnections: 0 }) as unknown as Server;
    const errors: Record<string, unknown>[] = [];
    const log = { warn: () => {}, error: (fields: Record<string, unknown>) => errors.push(fields) } as unknown as Parameters<typeof capConnections>[1]["log"];
    capConnections(server, { max: 3, listener: "http", log, onDrop: () => {} });
    // An EventEmitter throws an "error" nobody hears, as node's listener would end the process.
    expect(() => server.emit("error", Object.assign(new Error("accept EMFILE"), { code: "EMFILE" }))).not.toThrow();
    expect(errors).toEqual([expect.objectContaining({ listener: "http", code: "EMFILE" })]);
  });
});
