// One script's itx calls in flight, bounded. Every call holds what it read (a stream page of up
// to 4 MiB, a file) until the sandbox takes the answer, and a script can start as many calls as
// it likes with Promise.all: thirty parallel `streams.read`s of large pages added 500 MB to the
// host, and more were dropped by NATS as a slow consumer. Past `max`, a call waits its turn.

import type { HostCallHandler } from "../sandbox/index.ts";

/** The most itx calls of one script that run at once. */
export const MAX_ITX_CALLS_IN_FLIGHT = 8;

/** At most `max` calls of `handler` run at once; the others start in the order they were made. */
export function limitInFlight(handler: HostCallHandler, max: number = MAX_ITX_CALLS_IN_FLIGHT): HostCallHandler {
  if (!Number.isInteger(max) || max < 1) throw new RangeError(`max must be a positive integer, got ${max}`);
  let running = 0;
  const waiting: (() => void)[] = [];
  const release = () => {
    const next = waiting.shift();
    if (next === undefined) running--;
    else next();
  };
  return async (op, args) => {
    if (running < max) running++;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await handler(op, args);
    } finally {
      release();
    }
  };
}
