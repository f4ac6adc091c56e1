// The requests this process is running right now, by `(streamPath, requestOffset)`, so an
// interrupt (core NATS) or a redelivered work item can find the live call.

export type StopKind = "interrupted" | "settled-elsewhere" | "idle" | "deadline" | "shutdown";

/** The abort reason the driver gives its own model calls. */
export class RequestStop extends Error {
  constructor(
    readonly kind: StopKind,
    message: string,
  ) {
    super(message);
    this.name = "RequestStop";
  }
}

export interface RunningRequest {
  /** The text streamed so far. */
  partialText(): string;
  stop(stop: RequestStop): void;
  /** Resolves when the run has finished (settled or stood down). */
  readonly done: Promise<unknown>;
  /** Waiting for a driver slot: no model call yet (an interrupt still finds it). */
  readonly waitingForSlot?: boolean;
}

export const requestId = (streamPath: string, requestOffset: number): string => `${streamPath}@${requestOffset}`;

export class RunningRequests {
  private readonly byId = new Map<string, { readonly streamPath: string; readonly requestOffset: number; readonly request: RunningRequest }>();

  get(streamPath: string, requestOffset: number): RunningRequest | undefined {
    return this.byId.get(requestId(streamPath, requestOffset))?.request;
  }

  add(streamPath: string, requestOffset: number, request: RunningRequest): void {
    this.byId.set(requestId(streamPath, requestOffset), { streamPath, requestOffset, request });
  }

  delete(streamPath: string, requestOffset: number, request: RunningRequest): void {
    const id = requestId(streamPath, requestOffset);
    if (this.byId.get(id)?.request === request) this.byId.delete(id);
  }

  /** Model calls running (not those waiting for a slot). */
  get size(): number {
    let running = 0;
    for (const { request } of this.byId.values()) if (request.waitingForSlot !== true) running++;
    return running;
  }

  /** The requests waiting for a driver slot. */
  waitingForSlot(): Array<{ readonly streamPath: string; readonly requestOffset: number }> {
    return [...this.byId.values()].filter(({ request }) => request.waitingForSlot === true).map(({ streamPath, requestOffset }) => ({ streamPath, requestOffset }));
  }

  stopAll(stop: RequestStop): void {
    for (const { request } of this.byId.values()) request.stop(stop);
  }
}
