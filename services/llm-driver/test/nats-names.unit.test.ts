// The NATS permission lists (service-kit nats-permissions.ts) name the driver's durable and its
// interrupt subject; they must be the ones the driver really uses.
import { describe, expect, it } from "vitest";
import { INTERRUPT_SUBJECT, NATS_NAMES, NATS_PERMISSIONS, workStreamName } from "@agentrt/service-kit";
import { LLM_DRIVER_DURABLE } from "../src/index.ts";

describe("the driver's NATS names in the permission lists", () => {
  it("are the driver's own", () => {
    expect(NATS_NAMES.llmDriverDurable).toBe(LLM_DRIVER_DURABLE);
    // Pulls only from its own kind's stream, and cannot touch the hosts' one.
    expect(NATS_PERMISSIONS["llm-driver"].publish.allow).toContain(`$JS.API.CONSUMER.MSG.NEXT.${workStreamName("llm")}.${LLM_DRIVER_DURABLE}`);
    expect(NATS_PERMISSIONS["llm-driver"].publish.allow.filter((s) => s.includes(workStreamName("script")))).toEqual([]);
    expect(NATS_PERMISSIONS["llm-driver"].subscribe.allow).toContain(INTERRUPT_SUBJECT);
  });
});
