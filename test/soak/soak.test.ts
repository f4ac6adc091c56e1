// The chaos soak, short form (issue 16): about a minute of every fault at once under fifty
// talking agents (see soak.ts). `SOAK_SEED=<seed>` replays a printed schedule; the long form is
// `pnpm soak --minutes 10`.

import { describe, expect, it } from "vitest";
import { formatSoakReport, runSoak } from "./soak.ts";

const seed = Number(process.env.SOAK_SEED ?? Date.now() % 1_000_000);

describe("chaos soak (short form)", () => {
  it("keeps every invariant while everything fails at once", async () => {
    process.stdout.write(`soak seed ${seed} (SOAK_SEED=${seed} reproduces this schedule)\n`);
    const report = await runSoak({ seed, durationMs: 40_000, meanFaultIntervalMs: 1_200, log: (line) => process.stdout.write(`${line}\n`) });
    process.stdout.write(`soak/short seed=${seed}\n${formatSoakReport(report)}\n`);
    // Tens of faults, every kind among them.
    expect(report.faults).toBeGreaterThanOrEqual(20);
    for (const [kind, figures] of Object.entries(report.recovery)) expect(figures.injected, `${kind} injected`).toBeGreaterThan(0);
    expect(report.faultErrors).toEqual([]);
    expect(report.processesDown).toEqual([]);
    // The stuck turns themselves in the message: a CI log kept in part keeps its failures.
    expect(report.stuckTurns, `stuck turns (the first ${report.stuck.length}):\n${report.stuck.join("\n")}\nslow turns' waits: ${JSON.stringify(report.slowTurnWaits)}`).toBe(0);
    expect(report.foreignWorkItems).toBe(0);
    expect(report.notQuiesced).toEqual([]);
    expect(report.violationsByRule).toEqual({});
    expect(report.subscriberGaps).toBe(0);
    expect(report.subscriberDuplicates).toBe(0);
    expect(report.turns.script + report.turns.interrupted + report.turns["double-texted"]).toBeGreaterThan(0);
  }, 480_000);
});
