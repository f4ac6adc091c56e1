// What can end a model call besides its answer: the idle watchdog (no progress for the idle
// window), the request's deadline (`expiresAt`), service shutdown, and a settlement of the
// request by someone else appearing on the stream (expiry, interrupt, a faster twin).

import type { AgentEvent } from "@agentrt/contract";
import { timerDelayMs, type Logger } from "@agentrt/service-kit";
import type { EventStore } from "@agentrt/streams";
import { RequestStop } from "./running-requests.ts";

export interface RunTimers {
  /** Call on every sign of life from the model; cheap (no timer churn per chunk). */
  progress(): void;
  clear(): void;
}

export function armRunTimers(options: {
  expiresAt: string;
  idleTimeoutMs: number;
  nowMs: () => number;
  stop: (stop: RequestStop) => void;
  shutdown: AbortSignal | undefined;
}): RunTimers {
  const { idleTimeoutMs, nowMs, stop, shutdown, expiresAt } = options;
  let lastProgressAt = nowMs();
  let idleTimer: NodeJS.Timeout | undefined;
  // One timer, re-armed for the remainder when progress happened since it was set.
  const checkIdle = (): void => {
    const idleFor = nowMs() - lastProgressAt;
    if (idleFor >= idleTimeoutMs) stop(new RequestStop("idle", `no progress for ${idleTimeoutMs} ms`));
    else idleTimer = setTimeout(checkIdle, idleTimeoutMs - idleFor);
  };
  idleTimer = setTimeout(checkIdle, idleTimeoutMs);
  const deadlineTimer = setTimeout(() => stop(new RequestStop("deadline", `deadline ${expiresAt} passed`)), timerDelayMs(Date.parse(expiresAt) - nowMs()));
  const onShutdown = (): void => stop(new RequestStop("shutdown", "the driver is shutting down"));
  shutdown?.addEventListener("abort", onShutdown, { once: true });
  if (shutdown?.aborted) onShutdown();
  return {
    progress() {
      lastProgressAt = nowMs();
    },
    clear() {
      clearTimeout(idleTimer);
      clearTimeout(deadlineTimer);
      shutdown?.removeEventListener("abort", onShutdown);
    },
  };
}

/**
 * Follows a stream's new events from `fromOffset` (the driver's stream cache feed); undefined
 * when it cannot, and the watch then subscribes to the stream itself.
 */
export type FollowStream = (streamPath: string, fromOffset: number, onEvents: (events: readonly AgentEvent[]) => void) => (() => void) | undefined;

/** Stops the call when a settlement of R lands on the stream after `fromOffset`. */
export function watchForSettlement(
  store: EventStore,
  streamPath: string,
  R: number,
  fromOffset: number,
  stop: (stop: RequestStop) => void,
  log: Logger,
  follow?: FollowStream,
): { close(): void; lastSeenOffset(): number } {
  // The newest durable offset this turn has seen on its stream: what its live chunks sit after.
  let lastSeen = fromOffset - 1;
  const see = (event: AgentEvent): void => {
    if (event.offset > lastSeen) lastSeen = event.offset;
  };
  const lastSeenOffset = () => lastSeen;
  const settles = (event: AgentEvent): boolean => event.offset >= fromOffset && event.type === "agent/llm-request-settled" && event.payload.requestOffset === R;
  // One feed already carries every stream this driver serves: no consumer per turn.
  const unfollow = follow?.(streamPath, fromOffset, (events) => {
    for (const event of events) see(event);
    const settlement = events.find(settles);
    if (settlement !== undefined) stop(new RequestStop("settled-elsewhere", `request @${R} was settled at @${settlement.offset}`));
  });
  if (unfollow !== undefined) return { close: unfollow, lastSeenOffset };
  const subscription = store.subscribe(streamPath, { fromOffset });
  void (async () => {
    for await (const event of subscription) {
      see(event);
      if (settles(event)) {
        stop(new RequestStop("settled-elsewhere", `request @${R} was settled at @${event.offset}`));
        return;
      }
    }
  })().catch((error: unknown) => log.warn({ err: error }, "settlement watch ended with an error"));
  return { close: () => void subscription.close().catch(() => undefined), lastSeenOffset };
}
