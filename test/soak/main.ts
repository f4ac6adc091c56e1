// The chaos soak, long form: `pnpm soak --minutes 10 [--seed S] [--agents N]`. Prints the seed
// first (pass it back with --seed to replay the schedule), progress every 30 s, then the
// recovery table per fault kind and the totals; exits non-zero when an invariant broke.

import { parseArgs } from "node:util";
import { formatSoakReport, runSoak } from "./soak.ts";

const { values } = parseArgs({
  options: {
    minutes: { type: "string", default: "10" },
    seed: { type: "string" },
    agents: { type: "string", default: "50" },
    "fault-interval-ms": { type: "string", default: "1500" },
  },
});
const minutes = Number(values.minutes);
const seed = Number(values.seed ?? process.env.SOAK_SEED ?? Date.now() % 1_000_000);
const agents = Number(values.agents);
if (!(minutes > 0) || !Number.isInteger(seed) || !(agents > 0)) {
  process.stderr.write("usage: pnpm soak [--minutes M] [--seed S] [--agents N] [--fault-interval-ms MS]\n");
  process.exit(2);
}
process.stdout.write(`soak seed ${seed}, ${minutes} min, ${agents} agents\n`);
const report = await runSoak({
  seed,
  durationMs: minutes * 60_000,
  agents,
  meanFaultIntervalMs: Number(values["fault-interval-ms"]),
  log: (line) => process.stdout.write(`${line}\n`),
});
process.stdout.write(`${formatSoakReport(report)}\n`);
const broken =
  report.stuckTurns + report.violations + report.subscriberGaps + report.subscriberDuplicates + report.notQuiesced.length + report.faultErrors.length + report.processesDown.length + report.foreignWorkItems;
process.exit(broken === 0 ? 0 : 1);
