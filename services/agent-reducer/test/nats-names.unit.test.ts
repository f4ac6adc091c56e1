// The NATS permission lists (service-kit nats-permissions.ts) name the reducer's interrupt
// subject; it must be the one the reducer really requests on.
import { describe, expect, it } from "vitest";
import { INTERRUPT_SUBJECT, NATS_NAMES, NATS_PERMISSIONS } from "@agentrt/service-kit";
import { SNAPSHOT_BUCKET } from "../src/snapshots.ts";

describe("the reducer's NATS names in the permission lists", () => {
  it("are the reducer's own", () => {
    expect(NATS_PERMISSIONS["agent-reducer"].publish.allow).toContain(INTERRUPT_SUBJECT);
    expect(NATS_PERMISSIONS["web-gateway"].publish.allow).not.toContain(INTERRUPT_SUBJECT);
    expect(NATS_NAMES.snapshotsBucket).toBe(SNAPSHOT_BUCKET);
    expect(NATS_PERMISSIONS["agent-reducer"].publish.allow).toContain(`$KV.${SNAPSHOT_BUCKET}.>`);
  });
});
