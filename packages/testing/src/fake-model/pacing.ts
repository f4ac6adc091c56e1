// Token pacing for the fake model: splits text into word-sized tokens and emits them at a
// given rate. Due times are computed from the start (token i is due at start + i/rate), so
// high rates are honoured even though timers fire at millisecond granularity.

import type { ServerResponse } from "node:http";
import type { FakeRequestProgress } from "./types.ts";

/** Splits text into word-sized tokens (a word with its trailing whitespace). */
export function splitTokens(text: string): string[] {
  return text.match(/\S+\s*|\s+/g) ?? [];
}

/**
 * The machine's monotonic clock in milliseconds (`process.hrtime`): one reading in every process
 * on the machine, sub-millisecond, so two processes' stamps can be subtracted. Not
 * `performance.timeOrigin + performance.now()`: that is the wall clock read once at the
 * process's start and then advanced on the monotonic clock, and where the two clocks run at
 * different rates (seen: the wall clock 0.5 % fast, 5 ms a second) two processes started
 * seconds apart disagree by tens of milliseconds. Not epoch time either; for that, `Date.now()`.
 */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

export interface PaceOptions {
  readonly tokens: readonly string[];
  readonly tokensPerSecond: number;
  readonly stallAfterTokens?: number;
  readonly progress: FakeRequestProgress;
  readonly response: ServerResponse;
  /** Writes one token's wire frame. */
  readonly writeToken: (token: string, index: number) => void;
}

/**
 * Emits the tokens; resolves true when all were sent, false when the client went away or
 * the reply stalls (a stall never resolves the stream: the caller just stops writing).
 */
export async function paceTokens(options: PaceOptions): Promise<boolean> {
  const { tokens, tokensPerSecond, stallAfterTokens, progress, response, writeToken } = options;
  const limit = stallAfterTokens === undefined ? tokens.length : Math.min(stallAfterTokens, tokens.length);
  const start = monotonicMs();
  let index = 0;
  while (index < limit) {
    if (progress.clientAborted || response.destroyed) return false;
    const dueCount = Number.isFinite(tokensPerSecond)
      ? Math.min(limit, Math.floor(((monotonicMs() - start) / 1000) * tokensPerSecond) + 1)
      : limit;
    let backpressure = false;
    while (index < dueCount) {
      writeToken(tokens[index] as string, index);
      index += 1;
      progress.tokensSent = index;
      const at = monotonicMs();
      progress.firstTokenAtMs ??= at;
      progress.lastTokenAtMs = at;
      if (response.writableNeedDrain) {
        backpressure = true;
        break;
      }
    }
    if (backpressure) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          response.off("drain", done);
          response.off("close", done);
          resolve();
        };
        response.on("drain", done);
        response.on("close", done);
      });
    } else if (index < limit) {
      const nextDue = start + (index / tokensPerSecond) * 1000;
      await delay(Math.max(0, nextDue - monotonicMs()));
    }
  }
  return limit === tokens.length && !progress.clientAborted;
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
