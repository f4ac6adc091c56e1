// Chaos tests' process killer: SIGKILLs replicas of one service in turn while a test's turns run.

import type { ServiceProcess } from "./processes.ts";

export interface KillerInTurn {
  /** Kills so far. */
  readonly kills: number;
  /** Stops killing (after the pause in progress); resolves to the number of kills. */
  stop(): Promise<number>;
}

/**
 * Every `pauseMs()`, SIGKILLs the next replica in rotation that is serving and starts it again at
 * once, as a supervisor would; never the last one serving (on two shared cores a fresh
 * incarnation needs seconds to boot).
 */
export function killInTurn(replicas: readonly ServiceProcess[], pauseMs: () => number): KillerInTurn {
  let kills = 0;
  let running = true;
  const loop = (async () => {
    let next = 0;
    while (running) {
      await new Promise((r) => setTimeout(r, pauseMs()));
      if (!running) break;
      if (replicas.filter((r) => r.ready).length < 2) continue;
      let victim = replicas[next % replicas.length]!;
      while (!victim.ready) victim = replicas[++next % replicas.length]!;
      next += 1;
      await victim.signal("SIGKILL");
      victim.start();
      kills += 1;
      void victim.waitReady(120_000).catch(() => undefined);
    }
  })();
  return {
    get kills() {
      return kills;
    },
    async stop() {
      running = false;
      await loop;
      return kills;
    },
  };
}
