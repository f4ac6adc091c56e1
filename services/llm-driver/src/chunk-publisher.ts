// Publishes coalesced chunks on the live lane one flush after another, so a viewer sees the
// provider's order; a lost live event is logged, never fatal (the settlement carries the text).

import { mendIllFormedText } from "@agentrt/contract";
import type { Logger } from "@agentrt/service-kit";
import type { EventStore } from "@agentrt/streams";
import type { ChunkFlush } from "./chunk-coalescer.ts";
import type { DriverMetrics } from "./metrics.ts";

/** Publishes flushes on the live lane one after another, so a viewer sees provider order. */
export class ChunkPublisher {
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: EventStore,
    private readonly streamPath: string,
    private readonly requestOffset: number,
    private readonly metrics: DriverMetrics,
    private readonly log: Logger,
    /** The stream's newest durable offset this turn has seen: the chunks sit after it, and the store need not look it up. */
    private readonly knownLastOffset: () => number,
  ) {}

  publish(flush: ChunkFlush): void {
    const event = {
      type: "agent/llm-response-chunks" as const,
      payload: { chunks: mendIllFormedText([...flush.chunks]), llmRequestOffset: this.requestOffset, sequence: flush.sequence },
    };
    this.chain = this.chain.then(async () => {
      try {
        await this.store.append(this.streamPath, [event], { knownLastOffset: this.knownLastOffset() });
        this.metrics.chunkEvent(flush.chunks.length, flush.bytes);
      } catch (error) {
        // The live lane may lose events (contract); the settlement still carries the text.
        this.log.warn({ err: error, sequence: flush.sequence }, "publishing chunks failed");
      }
    });
  }

  drained(): Promise<void> {
    return this.chain;
  }
}
