// The typecheck budget is the checker's CPU time, not the wall clock. A budget in wall time
// counts the time a starved machine keeps the checker's thread off the CPU: under load (the
// chaos soak on a busy 2-core machine) every check overran its 2 s, each overrun terminated a
// warm worker, and each replacement spent 15–30 s of that starved machine warming up again,
// while every script waited for a warm checker. A thread's CPU time comes from
// /proc/<pid>/task/<tid>/stat (Linux); where that cannot be read, the budget stays wall time.

import { readFileSync, readlinkSync } from "node:fs";

/** Linux reports a thread's times in USER_HZ ticks, which is 100 per second on every architecture it runs on. */
const MS_PER_TICK = 10;

/**
 * User + system CPU milliseconds from the text of a /proc stat file, or undefined when it is
 * not one. The second field (the command) is in parentheses and may itself hold spaces and
 * parentheses, so the fields are counted from the last `)`.
 */
export function cpuMsOfStat(stat: string): number | undefined {
  const end = stat.lastIndexOf(")");
  if (end < 0) return undefined;
  // After the command: state (field 3) … utime (field 14), stime (field 15).
  const fields = stat.slice(end + 2).split(" ");
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  if (!Number.isInteger(utime) || !Number.isInteger(stime) || utime < 0 || stime < 0) return undefined;
  return (utime + stime) * MS_PER_TICK;
}

/** The stat file of the calling thread (a worker calls it to say which thread it is), or undefined off Linux. */
export function ownThreadStatPath(): string | undefined {
  try {
    return `/proc/${readlinkSync("/proc/thread-self")}/stat`;
  } catch {
    return undefined;
  }
}

/** A reader of one thread's CPU milliseconds; undefined when its stat file cannot be read (gone, or not Linux). */
export function threadCpuReader(statPath: string | undefined): (() => number | undefined) | undefined {
  if (statPath === undefined) return undefined;
  const read = (): number | undefined => {
    try {
      return cpuMsOfStat(readFileSync(statPath, "utf8"));
    } catch {
      return undefined;
    }
  };
  return read() === undefined ? undefined : read;
}

/**
 * Whether a check whose wall-clock budget has run out may go on: `stop`, or wait `moreMs` and
 * ask again. It goes on while it has used less CPU than its budget and the wall clock has not
 * reached `wallCapMs` (a starved machine must still not keep a script waiting without end).
 * Without a CPU reading, the wall clock decides, as before.
 */
export function budgetVerdict(check: { readonly budgetMs: number; readonly wallMs: number; readonly cpuMs: number | undefined; readonly wallCapMs: number }):
  | { readonly kind: "stop" }
  | { readonly kind: "continue"; readonly moreMs: number } {
  const { budgetMs, wallMs, cpuMs, wallCapMs } = check;
  if (cpuMs === undefined || cpuMs >= budgetMs || wallMs >= wallCapMs) return { kind: "stop" };
  // At least one tick of CPU, at most what the wall cap leaves.
  return { kind: "continue", moreMs: Math.max(MS_PER_TICK, Math.min(budgetMs - cpuMs, wallCapMs - wallMs)) };
}

/** How far past its budget a starved check may run in wall time (the budget × this). */
export const STARVED_WALL_FACTOR = 15;

/**
 * One check's budget from the moment it starts: its wall time, and its thread's CPU time where
 * `cpuMs` reads it. The worker's cancellation token and the host's termination timer both ask
 * it, once the budget has passed on the wall clock, whether the check may go on.
 */
export class CheckBudget {
  private readonly startedAt = performance.now();
  private readonly cpuAtStart: number | undefined;

  constructor(
    readonly budgetMs: number,
    private readonly cpuMs: (() => number | undefined) | undefined,
  ) {
    this.cpuAtStart = cpuMs?.();
  }

  get wallMs(): number {
    return performance.now() - this.startedAt;
  }

  /** The CPU milliseconds used since the start, or undefined without a reading. */
  cpuUsedMs(): number | undefined {
    if (this.cpuAtStart === undefined) return undefined;
    const now = this.cpuMs?.();
    return now === undefined ? undefined : now - this.cpuAtStart;
  }

  /** budgetVerdict for this check now, with the readings it was made from. */
  verdict(): ReturnType<typeof budgetVerdict> & { readonly wallMs: number; readonly cpuMs: number | undefined } {
    const wallMs = this.wallMs;
    const cpuMs = this.cpuUsedMs();
    return { ...budgetVerdict({ budgetMs: this.budgetMs, wallMs, cpuMs, wallCapMs: this.budgetMs * STARVED_WALL_FACTOR }), wallMs, cpuMs };
  }
}
