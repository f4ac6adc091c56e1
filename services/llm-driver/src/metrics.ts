// The driver's Prometheus metrics: turns and settlements by outcome, latency to the first
// token and of the whole turn, and live-lane chunk throughput.

import type { Metrics } from "@agentrt/service-kit";

export interface DriverMetrics {
  turnStarted(): void;
  turnFinished(outcome: string, durationSeconds: number): void;
  firstToken(latencySeconds: number): void;
  chunkEvent(chunkCount: number, bytes: number): void;
  workItem(outcome: string): void;
}

export function createDriverMetrics(metrics: Metrics): DriverMetrics {
  const turns = metrics.counter("agentrt_llm_turns_total", "Model turns finished, by outcome", ["outcome"]);
  const inFlight = metrics.gauge("agentrt_llm_turns_in_flight", "Model calls running now");
  const turnSeconds = metrics.histogram("agentrt_llm_turn_duration_seconds", "Model call duration, start to settlement", ["outcome"]);
  const firstTokenSeconds = metrics.histogram("agentrt_llm_first_token_seconds", "Model call start to first streamed chunk");
  const chunkEvents = metrics.counter("agentrt_llm_chunk_events_total", "Ephemeral llm-response-chunks events published");
  const chunks = metrics.counter("agentrt_llm_chunks_total", "Provider chunks passed through to the live lane");
  const chunkBytes = metrics.counter("agentrt_llm_chunk_bytes_total", "Bytes of provider chunks passed through");
  const workItems = metrics.counter("agentrt_llm_work_items_total", "Work items handled, by outcome", ["outcome"]);
  return {
    turnStarted: () => inFlight.inc(),
    turnFinished: (outcome, seconds) => {
      inFlight.dec();
      turns.inc({ outcome });
      turnSeconds.observe({ outcome }, seconds);
    },
    firstToken: (seconds) => firstTokenSeconds.observe(seconds),
    chunkEvent: (count, bytes) => {
      chunkEvents.inc();
      chunks.inc(count);
      chunkBytes.inc(bytes);
    },
    workItem: (outcome) => workItems.inc({ outcome }),
  };
}
