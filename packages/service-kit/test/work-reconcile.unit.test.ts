// When a work stream's durable consumer strands items (issue 16's long soak: nats-server 2.9's
// replicated work-queue consumer, after leader changes, held 246 and 423 items it counted as
// delivered and acknowledged, and no worker ever got them). `strandedWork` is the rule a worker
// checks its consumer against; the work queue recreates a consumer it finds stranding items twice.

import { describe, expect, it } from "vitest";
import { strandedWork } from "../src/index.ts";

const healthy = { deliveredStreamSeq: 40, ackFloorStreamSeq: 38, numPending: 3, numAckPending: 2 };

describe("a work consumer compared with its stream", () => {
  it("given items being delivered and acknowledged in the usual way, then nothing is stranded", () => {
    // Items 39 and 40 are out with workers, 41–43 wait to be delivered.
    expect(strandedWork({ messages: 5, firstSeq: 39, lastSeq: 43 }, healthy)).toBeUndefined();
    // Everything done: an empty stream whose consumer delivered its last item.
    expect(strandedWork({ messages: 0, firstSeq: 41, lastSeq: 40 }, { deliveredStreamSeq: 40, ackFloorStreamSeq: 40, numPending: 0, numAckPending: 0 })).toBeUndefined();
    // Out-of-order acks: item 39 still out, 40 acknowledged (deleted); the floor stays below 39.
    expect(strandedWork({ messages: 1, firstSeq: 39, lastSeq: 40 }, { deliveredStreamSeq: 40, ackFloorStreamSeq: 38, numPending: 0, numAckPending: 1 })).toBeUndefined();
  });

  it("given a stream holding items while the consumer has none to deliver and none out (the soak's 246), then they are stranded", () => {
    const fault = strandedWork({ messages: 246, firstSeq: 1200, lastSeq: 1900 }, { deliveredStreamSeq: 1900, ackFloorStreamSeq: 1100, numPending: 0, numAckPending: 0 });
    expect(fault?.kind).toBe("undelivered");
    expect(fault?.reason).toMatch(/holds 246 items but the consumer has none to deliver and none awaiting an acknowledgement/);
  });

  it("given items stored at or below the consumer's acknowledgement floor (the soak's 423), then they are stranded, whatever else is out", () => {
    const fault = strandedWork({ messages: 430, firstSeq: 17, lastSeq: 2000 }, { deliveredStreamSeq: 2000, ackFloorStreamSeq: 1500, numPending: 0, numAckPending: 7 });
    expect(fault?.kind).toBe("below-ack-floor");
    expect(fault?.reason).toMatch(/from sequence 17, at or below the consumer's acknowledgement floor 1500/);
  });

  it("given a consumer that has delivered past the stream's end, then the next items would be skipped", () => {
    const fault = strandedWork({ messages: 0, firstSeq: 901, lastSeq: 900 }, { deliveredStreamSeq: 950, ackFloorStreamSeq: 950, numPending: 0, numAckPending: 0 });
    expect(fault?.kind).toBe("ahead-of-stream");
    expect(fault?.reason).toMatch(/delivered up to stream sequence 950 but the stream ends at 900/);
  });
});
