// The gateway's operations, transport-free: HTTP, WebSocket and gRPC all call these, so the
// rules (offset ranges, not-found, what "the model saw" means) exist once.

import type { Tracer } from "@opentelemetry/api";
import { turnContext } from "@agentrt/service-kit";
import { ContractViolationError, type AgentEvent, withBirthGrant } from "@agentrt/contract";
import type { AppendResult, EventStore, Subscription } from "@agentrt/streams";
import { GatewayError } from "../errors.ts";
import type { AgentCorePort, AgentView, AuditResult, BirthInput, RenderedMessage } from "./agent-core-port.ts";
import { BirthCheck } from "./birth-check.ts";
import { LiveHub } from "./live-hub.ts";

export interface ReadPage {
  readonly streamPath: string;
  readonly events: readonly AgentEvent[];
  readonly nextOffset: number;
  readonly lastOffset: number;
}

export interface AgentListEntry extends AgentView {
  readonly streamPath: string;
  readonly lastOffset: number;
}

export interface RenderedRequest {
  readonly streamPath: string;
  readonly requestOffset: number;
  readonly model: string;
  readonly requestedAt: string;
  readonly messages: RenderedMessage[];
}

/** The most agents one list call folds (each needs its stream read once, then is cached). */
export const MAX_LIST = 500;
/** Folded states kept in memory; the least recently used beyond this are folded again on demand. */
export const MAX_CACHED_STATES = 2_000;

export class GatewayApi<S = unknown> {
  /** Folded state per stream, advanced incrementally: lists and state reads stay cheap. */
  private readonly cache = new Map<string, { state: S; lastOffset: number }>();

  /** One shared store subscription per followed stream, however many clients follow it. */
  readonly live: LiveHub;

  /** Refuses user input to a path with no agent (404), before anything is written. */
  private readonly births: BirthCheck;

  constructor(
    private readonly store: EventStore,
    private readonly core: AgentCorePort<S>,
    /** Starts the trace of every turn a committed user message triggers. */
    private readonly tracer?: Tracer,
  ) {
    this.live = new LiveHub(store);
    this.births = new BirthCheck(store);
  }

  async createAgent(input: BirthInput): Promise<AppendResult> {
    const born = this.core.birthBatch(input);
    const batch = input.grant === undefined ? born : withBirthGrant(born, input.grant);
    try {
      return await this.store.append(input.streamPath, batch, { expectedLastOffset: 0 });
    } catch (error) {
      if (error instanceof Error && "code" in error && error.code === "conflict") {
        throw new GatewayError("conflict", `An agent already exists at ${input.streamPath}.`, { streamPath: input.streamPath });
      }
      throw error;
    }
  }

  async append(streamPath: string, events: readonly unknown[], expectedLastOffset?: number): Promise<AppendResult> {
    const startedAt = Date.now();
    await this.births.assertUserInputHasAgent(streamPath, events);
    const result = await this.store.append(streamPath, events, expectedLastOffset === undefined ? {} : { expectedLastOffset });
    if (this.tracer !== undefined && result.status === "committed") {
      // A user's message is where a turn starts: its span opens the turn's trace, which the
      // reducer, driver and host join by deriving the same trace id from (path, offset).
      for (const event of result.events) {
        if (event.type !== "agents/context-added" || event.payload.role !== "user") continue;
        this.tracer
          .startSpan("gateway.user-message", { startTime: startedAt, attributes: { "agentrt.stream_path": streamPath, "agentrt.offset": event.offset } }, turnContext(streamPath, event.offset))
          .end();
      }
    }
    return result;
  }

  async read(streamPath: string, fromOffset: number, limit: number): Promise<ReadPage> {
    const lastOffset = await this.assertOffsetInRange(streamPath, fromOffset);
    const events = await this.store.read(streamPath, { fromOffset, limit });
    const tail = events.at(-1);
    return { streamPath, events, nextOffset: tail === undefined ? fromOffset : tail.offset + 1, lastOffset };
  }

  /** Opens a live subscription after checking the start offset; history then live. */
  async subscribe(streamPath: string, fromOffset: number, ephemeral: boolean): Promise<Subscription> {
    await this.assertOffsetInRange(streamPath, fromOffset);
    return this.live.subscribe(streamPath, fromOffset, ephemeral);
  }

  async state(streamPath: string): Promise<{ streamPath: string; lastOffset: number; state: Record<string, unknown> }> {
    const { state, lastOffset } = await this.folded(streamPath);
    if (lastOffset === 0) throw notFound(streamPath);
    return { streamPath, lastOffset, state: this.core.toJson(state) };
  }

  async list(prefix: string | undefined, canRead: (path: string) => boolean): Promise<AgentListEntry[]> {
    const streams = (await this.store.listStreams(prefix)).filter((s) => canRead(s.streamPath)).slice(0, MAX_LIST);
    const entries: AgentListEntry[] = [];
    for (const s of streams) {
      const { state, lastOffset } = await this.folded(s.streamPath);
      entries.push({ streamPath: s.streamPath, lastOffset, ...this.core.view(state) });
    }
    return entries.sort((a, b) => a.streamPath.localeCompare(b.streamPath));
  }

  /** The stream's invariants checked from its events (`agents audit`). */
  async audit(streamPath: string): Promise<AuditResult> {
    const events = await this.store.read(streamPath);
    if (events.length === 0) throw notFound(streamPath);
    return this.core.audit(events, Date.now());
  }

  /** What the model saw for the request at `requestOffset`: fold through it, then render. */
  async renderedRequest(streamPath: string, requestOffset: number): Promise<RenderedRequest> {
    const events = await this.store.read(streamPath, { fromOffset: 1, limit: requestOffset });
    const request = events.at(-1);
    if (request === undefined || request.offset !== requestOffset) {
      throw new GatewayError("not_found", `${streamPath} has no event at offset ${requestOffset}.`, { streamPath, requestOffset });
    }
    if (request.type !== "agent/llm-request-requested") {
      throw new GatewayError(
        "not_found",
        `${streamPath}@${requestOffset} is a "${request.type}", not an "agent/llm-request-requested".`,
        { streamPath, requestOffset, type: request.type },
      );
    }
    let state = this.core.initialState(streamPath);
    for (const event of events) state = this.core.foldEvent(state, event);
    return {
      streamPath,
      requestOffset,
      model: request.payload.model,
      requestedAt: request.createdAt,
      messages: this.core.renderRequest(state, request),
    };
  }

  private async folded(streamPath: string): Promise<{ state: S; lastOffset: number }> {
    const cached = this.cache.get(streamPath) ?? { state: this.core.initialState(streamPath), lastOffset: 0 };
    const fresh = await this.store.read(streamPath, { fromOffset: cached.lastOffset + 1 });
    let { state, lastOffset } = cached;
    for (const event of fresh) {
      state = this.core.foldEvent(state, event);
      lastOffset = event.offset;
    }
    const next = { state, lastOffset };
    if (lastOffset > 0) {
      // Re-inserting moves the entry to the end of the Map's order, so the first key is the least recently used.
      this.cache.delete(streamPath);
      this.cache.set(streamPath, next);
      if (this.cache.size > MAX_CACHED_STATES) this.cache.delete(this.cache.keys().next().value!);
    }
    return next;
  }

  private async assertOffsetInRange(streamPath: string, fromOffset: number): Promise<number> {
    const lastOffset = await this.store.lastOffset(streamPath);
    if (fromOffset > lastOffset + 1) {
      throw new ContractViolationError(
        "offset_out_of_range",
        `fromOffset ${fromOffset} is past the end of ${streamPath} (last offset ${lastOffset}; the most you can ask is ${lastOffset + 1}).`,
        [{ path: "fromOffset", message: `must be at most ${lastOffset + 1}` }],
        { streamPath, fromOffset, lastOffset },
      );
    }
    return lastOffset;
  }
}

function notFound(streamPath: string): GatewayError {
  return new GatewayError("not_found", `No agent stream at ${streamPath}.`, { streamPath });
}
