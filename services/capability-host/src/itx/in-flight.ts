// One script's itx calls in flight, bounded. Every call holds what it read (a stream page of up
// to 4 MiB, a file) until the sandbox takes the answer, and a script can start as many calls as
// it likes with Promise.all: thirty parallel `streams.read`s of large pages added 500 MB to the
// host, and more were dropped by NATS as a slow consumer. Past `max`, a call waits its turn.

import type { HostCallHandler } from "../sandbox/index.ts";

/** The most itx calls of one script that run at once. */
export const MAX_ITX_CALLS_IN_FLIGHT = 8;

/**
 * At most `max` calls of `handler` run at once; the others start in the order they were made.
 * Once `ended` aborts (the script has returned, thrown or been stopped), calls still waiting
 * never start, and later ones are refused: a script that returned right after starting 3 000
 * unawaited calls had them land after its settlement, one after another, while its agent's next
 * script ran. Calls already running finish.
 */
export function limitInFlight(handler: HostCallHandler, max: number = MAX_ITX_CALLS_IN_FLIGHT, ended?: AbortSignal): HostCallHandler {
  if (!Number.isInteger(max) || max < 1) throw new RangeError(`max must be a positive integer, got ${max}`);
  let running = 0;
  const waiting: { start(): void; refuse(): void }[] = [];
  const release = () => {
    const next = waiting.shift();
    if (next === undefined) running--;
    else next.start();
  };
  ended?.addEventListener("abort", () => {
    for (const call of waiting.splice(0)) call.refuse();
  });
  const over = (op: string) => new Error(`itx ${op}: the script had finished before this call could start; await itx calls before returning.`);
  return async (op, args) => {
    if (ended?.aborted === true) throw over(op);
    if (running < max) running++;
    else await new Promise<void>((start, refuse) => waiting.push({ start, refuse: () => refuse(over(op)) }));
    try {
      return await handler(op, args);
    } finally {
      release();
    }
  };
}
