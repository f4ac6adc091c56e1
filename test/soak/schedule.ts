// The soak's fault schedule: a pure function of the seed, so a printed seed replays the same
// faults at the same moments against the same victims (the system's own timing still varies).

import { prng } from "@agentrt/testing";

export const FAULT_KINDS = [
  "driver-kill",
  "driver-freeze",
  "reducer-kill",
  "reducer-freeze",
  "host-kill",
  "host-freeze",
  "nats-node-kill",
  "gateway-restart",
  "provider-kill",
  "model-500",
  "model-stall",
] as const;

export type FaultKind = (typeof FAULT_KINDS)[number];

export interface ScheduledFault {
  /** Milliseconds after the soak's start. */
  readonly atMs: number;
  readonly kind: FaultKind;
  /** Which replica (or NATS node), as a fraction in [0, 1): the executor maps it onto whoever can take the fault. */
  readonly victim: number;
  /** How long a frozen process stays frozen or a killed node/provider stays down; for model faults, how many requests fail. */
  readonly durationMs: number;
  readonly count: number;
}

export interface ScheduleOptions {
  readonly seed: number;
  readonly durationMs: number;
  /** Mean gap between two faults. */
  readonly meanIntervalMs: number;
}

export function faultSchedule(options: ScheduleOptions): ScheduledFault[] {
  const random = prng(options.seed);
  const faults: ScheduledFault[] = [];
  // The first faults land after the agents have started talking.
  let at = 2_000;
  while (at < options.durationMs) {
    // Every kind comes up once per round of |kinds| faults (in a seeded order), so even a short
    // soak injects every kind, then the gap to the next fault is drawn around the mean.
    const order = shuffled(FAULT_KINDS.length, random);
    for (const index of order) {
      if (at >= options.durationMs) break;
      const kind = FAULT_KINDS[index]!;
      faults.push({
        atMs: Math.round(at),
        kind,
        victim: random(),
        durationMs: Math.round(kind === "nats-node-kill" ? 2_000 + random() * 4_000 : kind.endsWith("freeze") ? 1_000 + random() * 6_000 : 500 + random() * 2_500),
        count: 1 + Math.floor(random() * 3),
      });
      at += options.meanIntervalMs * (0.5 + random());
    }
  }
  return faults;
}

function shuffled(n: number, random: () => number): number[] {
  const order = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order;
}
