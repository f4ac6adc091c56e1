// The gateway's operations, transport-free: HTTP, WebSocket and gRPC all call these, so the
// rules (offset ranges, not-found, what "the model saw" means) exist once.

import type { Tracer } from "@opentelemetry/api";
import { turnContext } from "@agentrt/service-kit";
import {
  AgentRuntimeError,
  applyGrantEvent,
  ContractViolationError,
  type AgentEvent,
  type EventInput,
  type GrantState,
  isAgentRuntimeError,
  parseEventInput,
  UNBORN_GRANT,
  withBirthGrant,
} from "@agentrt/contract";
import { type AppendResult, type EventStore, StreamQuota, type Subscription, assertEventSizes, jsonBytes, quotaStore, tenantOf } from "@agentrt/streams";
import { GatewayError } from "../errors.ts";
import type { AgentCorePort, AgentView, AuditResult, BirthInput, RenderedMessage } from "./agent-core-port.ts";
import { BirthCheck } from "./birth-check.ts";
import { LiveHub } from "./live-hub.ts";
import { ReadGate } from "./read-gate.ts";
import { DEFAULT_READ_LIMITS, MAX_LIST, type ReadLimits } from "./read-limits.ts";

export { MAX_LIST } from "./read-limits.ts";

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

/** `GET …/usage`: a stream's and its tenant's usage against their quotas. */
export interface StreamUsageReport {
  readonly streamPath: string;
  readonly events: number;
  readonly bytes: number;
  readonly quota: { readonly events: number; readonly bytes: number };
  /** Null when tenant quotas are off, or the caller may not read the tenant's prefix. */
  readonly tenant: { readonly prefix: string; readonly streams: number; readonly bytes: number; readonly quota: { readonly streams: number; readonly bytes: number } } | null;
}

export interface AgentListPage {
  readonly agents: AgentListEntry[];
  /** Pass as `after` for the next page; absent on the last page. */
  readonly next?: string;
}

/** Who a read is for and when to give up on it. */
export interface ReadContext {
  /** Aborted when the client goes away: the read stops pulling. */
  readonly signal?: AbortSignal;
  /** The API key (id) it is read for: the read gate shares the gateway fairly between keys. */
  readonly caller?: string;
}

export interface ListPageOptions extends ReadContext {
  readonly after?: string;
  readonly limit?: number;
}

export interface GatewayApiOptions {
  /**
   * The store reads go through (pages, folds, listings): by default the append store. main.ts
   * gives it its own NATS connection, so a flood of big reads cannot stall appends and live
   * subscriptions behind it on one socket.
   */
  readonly readStore?: EventStore;
  readonly limits?: Partial<ReadLimits>;
  /**
   * Holds each agent's stream to a quota of events and bytes: an append to a stream at its quota
   * is refused with 403 `quota_exceeded`. Default: the default quota, counted in this process only.
   */
  readonly quota?: StreamQuota;
}

/** Folded states kept in memory; the least recently used beyond this are folded again on demand. */
export const MAX_CACHED_STATES = 2_000;

export class GatewayApi<S = unknown> {
  /** Folded state per stream, advanced incrementally: lists and state reads stay cheap. */
  private readonly cache = new Map<string, CachedState<S>>();
  /** Each agent's grant as its events fold it (contract's `applyGrantEvent`), through an offset; the least recently used first. */
  private readonly grants = new Map<string, { grant: GrantState; lastOffset: number }>();
  /**
   * The `foldedBytes` of every cached state, summed, and bounded by `limits.maxCachedStateBytes`:
   * without it, a read-only key asking for the state of a few agents with large contexts filled
   * the gateway's memory with them.
   */
  private cachedBytes = 0;

  /** One shared store subscription per followed stream, however many clients follow it. */
  readonly live: LiveHub;

  /** Refuses user input to a path with no agent (404), before anything is written. */
  private readonly births: BirthCheck;
  private readonly reads: EventStore;
  /** The store appends go through: held to the stream quota. */
  private readonly appends: EventStore;
  private readonly quota: StreamQuota;
  readonly limits: ReadLimits;
  private readonly gate: ReadGate;

  constructor(
    private readonly store: EventStore,
    private readonly core: AgentCorePort<S>,
    /** Starts the trace of every turn a committed user message triggers. */
    private readonly tracer?: Tracer,
    options: GatewayApiOptions = {},
  ) {
    this.live = new LiveHub(store);
    this.births = new BirthCheck(store);
    this.reads = options.readStore ?? store;
    this.quota = options.quota ?? new StreamQuota(this.reads);
    this.appends = quotaStore(store, this.quota);
    this.limits = { ...DEFAULT_READ_LIMITS, ...options.limits };
    this.gate = new ReadGate({ perKey: this.limits.maxConcurrentReadsPerKey, total: this.limits.maxConcurrentReads });
  }

  /** Runs an expensive read once the gate admits it for its caller. */
  private gated<T>(ctx: ReadContext, work: () => Promise<T>): Promise<T> {
    return this.gate.run(ctx.caller ?? "anonymous", ctx.signal, work);
  }

  /** `mayReadTenant`: whether the caller may see its tenant's usage, which a quota refusal tells of (see `usage`). */
  async createAgent(input: BirthInput, mayReadTenant: (prefix: string) => boolean = () => true): Promise<AppendResult> {
    const born = this.core.birthBatch(input);
    const batch = input.grant === undefined ? born : withBirthGrant(born, input.grant);
    assertEventSizes(batch, this.limits.maxEventBytes);
    let result: AppendResult;
    try {
      result = await this.appends.append(input.streamPath, batch, { expectedLastOffset: 0 });
    } catch (error) {
      if (error instanceof Error && "code" in error && error.code === "conflict") {
        throw new GatewayError("conflict", `An agent already exists at ${input.streamPath}.`, { streamPath: input.streamPath });
      }
      if (isAgentRuntimeError(error) && error.code === "batch_too_large") {
        // The caller sent a prompt file, not a batch: name what it can change.
        const { bytes, maxBytes } = error.details as { bytes?: unknown; maxBytes?: unknown };
        throw new GatewayError(
          "batch_too_large",
          `The agent's birth batch (its sections, each stored with its key twice, and the boot context) encodes to ${String(bytes)} bytes, past the ${String(maxBytes)} one append may take; shorten the prompt file (fewer or shorter sections and keys).`,
          { bytes, maxBytes, issues: [{ path: "promptFile", message: `its birth batch encodes to at most ${String(maxBytes)} bytes` }] },
        );
      }
      throw tenantUsageHidden(error, mayReadTenant);
    }
    // The birth's keys make a retried create a duplicate; a different one (another prompt file,
    // project or grant) had answered duplicate too, and its changes were silently dropped.
    if (result.status === "duplicate" && !sameBirth(result.events, batch)) {
      throw new GatewayError("conflict", `An agent already exists at ${input.streamPath}, born from another prompt file, project or grant; this create wrote nothing.`, {
        streamPath: input.streamPath,
      });
    }
    return result;
  }

  async append(streamPath: string, events: readonly unknown[], expectedLastOffset?: number, mayReadTenant: (prefix: string) => boolean = () => true): Promise<AppendResult> {
    const startedAt = Date.now();
    // Refused here with a 413 naming the event and the limit; the store checks again.
    assertEventSizes(events, this.limits.maxEventBytes);
    await this.births.assertInputHasAgent(streamPath, events);
    const result = await this.appends
      .append(streamPath, events, expectedLastOffset === undefined ? {} : { expectedLastOffset })
      .catch((error: unknown) => Promise.reject(tenantUsageHidden(error, mayReadTenant)));
    // A duplicate answers with the events stored under the key. To a key that may not read the
    // stream that was a read: one guessed key showed whatever was stored under it (red-team).
    // Such a key gets the stored events only when they are what it sent.
    if (result.status === "duplicate" && !mayReadTenant(streamPath) && !sameKeyedEvents(result.events, events)) {
      throw new GatewayError("conflict", `Events with these idempotency keys are already on ${streamPath}, with other content; this append wrote nothing. (What is stored is shown only to a key that may read the stream.)`, {
        streamPath,
      });
    }
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

  /** One page: at most `limit` events and `maxPageBytes` of them (at least one); `nextOffset` continues. */
  async read(streamPath: string, fromOffset: number, limit: number, ctx: ReadContext = {}): Promise<ReadPage> {
    const lastOffset = await this.assertOffsetInRange(streamPath, fromOffset);
    const events = await this.gated(ctx, () => this.reads.read(streamPath, this.pageOptions(fromOffset, ctx.signal, limit)));
    const tail = events.at(-1);
    // Nothing from `fromOffset` through an end that was there before the read: every event left
    // is one this version cannot read (a newer writer's), passed over; the next page starts
    // after them, not at them again (a client paging by nextOffset had read the same page forever).
    const nextOffset = tail !== undefined ? tail.offset + 1 : fromOffset <= lastOffset ? lastOffset + 1 : fromOffset;
    return { streamPath, events, nextOffset, lastOffset };
  }

  /** Opens a live subscription after checking the start offset; history then live. */
  async subscribe(streamPath: string, fromOffset: number, ephemeral: boolean): Promise<Subscription> {
    await this.assertOffsetInRange(streamPath, fromOffset);
    return this.live.subscribe(streamPath, fromOffset, ephemeral);
  }

  async state(streamPath: string, ctx: ReadContext = {}): Promise<{ streamPath: string; lastOffset: number; state: Record<string, unknown> }> {
    const { state, lastOffset } = await this.gated(ctx, () => this.folded(streamPath, ctx.signal));
    if (lastOffset === 0) throw notFound(streamPath);
    return { streamPath, lastOffset, state: this.core.toJson(state) };
  }

  /**
   * One page of the agents under `prefix` the caller may read, in path order. A page ends at
   * `limit` agents, or early once folding has cost `maxListFoldBytes` (at least one agent), so
   * a prefix of large streams costs bounded work per request; `next` continues.
   */
  async list(prefix: string | undefined, canRead: (path: string) => boolean, options: ListPageOptions = {}): Promise<AgentListPage> {
    return await this.gated(options, () => this.listPage(prefix, canRead, options));
  }

  private async listPage(prefix: string | undefined, canRead: (path: string) => boolean, options: ListPageOptions): Promise<AgentListPage> {
    const limit = Math.min(options.limit ?? MAX_LIST, MAX_LIST);
    const signal = options.signal;
    const streams = await this.reads.listStreams(prefix, {
      limit: limit + 1,
      include: canRead,
      ...(options.after === undefined ? {} : { after: options.after }),
      ...(signal === undefined ? {} : { signal }),
    });
    const agents: AgentListEntry[] = [];
    let foldedBytes = 0;
    for (const s of streams.slice(0, limit)) {
      const folded = await this.folded(s.streamPath, signal);
      foldedBytes += folded.bytes;
      agents.push({ streamPath: s.streamPath, lastOffset: folded.lastOffset, ...this.core.view(folded.state) });
      if (foldedBytes >= this.limits.maxListFoldBytes) break;
    }
    const more = streams.length > agents.length;
    return more ? { agents, next: (agents.at(-1) as AgentListEntry).streamPath } : { agents };
  }

  /**
   * The agent's grant as its events stand now (the one a script requested next runs with, unless
   * a change lands first): a script request's requester is narrowed to it. Folded on from where
   * the last call stopped, page by page (a fold cut short by an abort is not wasted).
   */
  async grantOf(streamPath: string, ctx: ReadContext = {}): Promise<GrantState> {
    return await this.gated(ctx, async () => {
      // Its own cache, by stream, whatever the stream's size: a grant is a few entries, and a
      // stream too large for the state cache had been read whole for every script request (a key
      // that may only append could make the gateway do so at will; review).
      let { grant, lastOffset } = this.grants.get(streamPath) ?? { grant: UNBORN_GRANT, lastOffset: 0 };
      for (;;) {
        const page = await this.reads.read(streamPath, this.pageOptions(lastOffset + 1, ctx.signal));
        if (page.length === 0) break;
        for (const event of page) grant = applyGrantEvent(grant, event);
        lastOffset = (page.at(-1) as AgentEvent).offset;
        this.grants.delete(streamPath);
        this.grants.set(streamPath, { grant, lastOffset });
        if (this.grants.size > MAX_CACHED_GRANTS) this.grants.delete(this.grants.keys().next().value as string);
      }
      return grant;
    });
  }

  /**
   * What the stream holds against its quota, and its tenant against the tenant's: the stream is
   * counted through its last event first (a read of what came after the last count). The tenant's
   * usage tells of its other streams, so it is shown only to a caller who may read its prefix.
   */
  async usage(streamPath: string, ctx: ReadContext = {}, mayReadTenant: (prefix: string) => boolean = () => true): Promise<StreamUsageReport> {
    return await this.gated(ctx, async () => {
      const usage = await this.quota.countNow(streamPath, ctx.signal);
      if (usage.through === 0) throw notFound(streamPath);
      const { limits, tenantLimits } = this.quota;
      const report = { streamPath, events: usage.through, bytes: usage.bytes, quota: { events: limits.events, bytes: limits.bytes } };
      const prefix = tenantOf(streamPath, tenantLimits.depth);
      if (tenantLimits.depth === 0 || !mayReadTenant(prefix)) return { ...report, tenant: null };
      const tenant = await this.quota.tenantUsage(prefix);
      return { ...report, tenant: { prefix, streams: tenant.streams, bytes: tenant.bytes, quota: { streams: tenantLimits.streams, bytes: tenantLimits.bytes } } };
    });
  }

  /**
   * The stream's invariants checked from its events (`agents audit`), read one bounded page at a
   * time: the audit keeps its findings and the fold, not the events.
   */
  async audit(streamPath: string, ctx: ReadContext = {}): Promise<AuditResult> {
    return await this.gated(ctx, async () => {
      const audit = this.core.auditor(Date.now());
      let read = 0;
      for (let from = 1; ; ) {
        const page = await this.reads.read(streamPath, this.pageOptions(from, ctx.signal));
        if (page.length === 0) break;
        for (const event of page) audit.add(event);
        read += page.length;
        from = (page.at(-1) as AgentEvent).offset + 1;
      }
      if (read === 0) throw notFound(streamPath);
      return audit.report();
    });
  }

  /** What the model saw for the request at `requestOffset`: fold through it, then render. */
  async renderedRequest(streamPath: string, requestOffset: number, ctx: ReadContext = {}): Promise<RenderedRequest> {
    return await this.gated(ctx, () => this.renderRequestAt(streamPath, requestOffset, ctx.signal));
  }

  private async renderRequestAt(streamPath: string, requestOffset: number, signal: AbortSignal | undefined): Promise<RenderedRequest> {
    // Folded page by page (bounded bytes per read), keeping the fold, not the events.
    let state = this.core.initialState(streamPath);
    let request: AgentEvent | undefined;
    for (let from = 1; from <= requestOffset; ) {
      const page = await this.reads.read(streamPath, this.pageOptions(from, signal, requestOffset - from + 1));
      if (page.length === 0) break;
      // One fold per page (a fold per event copied the context each time: 40 000 sections held
      // the gateway's event loop for 25 s, red-team).
      const last = page.at(-1) as AgentEvent;
      if (last.offset === requestOffset) request = last;
      state = this.core.foldEvents(state, request === last ? page.slice(0, -1) : page);
      from = last.offset + 1;
    }
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
    state = this.core.foldEvents(state, [request]);
    return {
      streamPath,
      requestOffset,
      model: request.payload.model,
      requestedAt: request.createdAt,
      messages: this.core.renderRequest(state, request),
    };
  }

  /**
   * The stream's state folded through its end, from the cache onwards, one bounded page at a
   * time. Progress is cached page by page, so a fold cut short (an abort) is not wasted.
   * `bytes` is what this call read.
   */
  private async folded(streamPath: string, signal?: AbortSignal): Promise<{ state: S; lastOffset: number; bytes: number }> {
    const cached = this.cache.get(streamPath) ?? { state: this.core.initialState(streamPath), lastOffset: 0, foldedBytes: 0 };
    let { state, lastOffset } = cached;
    let bytes = 0;
    for (;;) {
      const page = await this.reads.read(streamPath, this.pageOptions(lastOffset + 1, signal));
      if (page.length === 0) break;
      // One fold per page (a fold per event copied the context each time).
      state = this.core.foldEvents(state, page);
      lastOffset = (page.at(-1) as AgentEvent).offset;
      for (const event of page) bytes += jsonBytes(event);
      this.remember(streamPath, { state, lastOffset, foldedBytes: cached.foldedBytes + bytes });
    }
    return { state, lastOffset, bytes };
  }

  private remember(streamPath: string, entry: CachedState<S>): void {
    this.forget(streamPath);
    if (entry.foldedBytes > this.limits.maxCachedStateBytes) return;
    // Inserting puts the entry at the end of the Map's order, so the first key is the least recently used.
    this.cache.set(streamPath, entry);
    this.cachedBytes += entry.foldedBytes;
    while (this.cache.size > MAX_CACHED_STATES || this.cachedBytes > this.limits.maxCachedStateBytes) this.forget(this.cache.keys().next().value!);
  }

  private forget(streamPath: string): void {
    const entry = this.cache.get(streamPath);
    if (entry === undefined) return;
    this.cache.delete(streamPath);
    this.cachedBytes -= entry.foldedBytes;
  }

  private pageOptions(fromOffset: number, signal: AbortSignal | undefined, limit?: number) {
    return { fromOffset, maxBytes: this.limits.maxPageBytes, ...(limit === undefined ? {} : { limit }), ...(signal === undefined ? {} : { signal }) };
  }

  private async assertOffsetInRange(streamPath: string, fromOffset: number): Promise<number> {
    const lastOffset = await this.reads.lastOffset(streamPath);
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

interface CachedState<S> {
  readonly state: S;
  readonly lastOffset: number;
  /** The bytes of the events folded into it: its size, roughly (a large context is large events). */
  readonly foldedBytes: number;
}

/** Agents whose grant is kept folded (a few entries each). */
const MAX_CACHED_GRANTS = 10_000;

function notFound(streamPath: string): GatewayError {
  return new GatewayError("not_found", `No agent stream at ${streamPath}.`, { streamPath });
}

/**
 * A tenant quota's refusal as a caller who may not read the tenant's prefix sees it: which quota,
 * not what the tenant's other streams hold (GET …/usage shows that only to a key that may read
 * the prefix; a key scoped to one agent had read its tenant's totals from a refused create).
 */
function tenantUsageHidden(error: unknown, mayReadTenant: (prefix: string) => boolean): unknown {
  if (!isAgentRuntimeError(error) || error.code !== "quota_exceeded") return error;
  const { tenant, streamPath, quotaTenantStreams, quotaTenantBytes } = error.details as { tenant?: unknown; streamPath?: unknown; quotaTenantStreams?: unknown; quotaTenantBytes?: unknown };
  if (typeof tenant !== "string" || mayReadTenant(tenant)) return error;
  return new AgentRuntimeError(
    "quota_exceeded",
    `Tenant ${tenant} (every stream under it) is at its quota of ${String(quotaTenantStreams)} streams and ${String(quotaTenantBytes)} bytes; this append to ${String(streamPath)} would pass it. Nothing was appended. (What the tenant holds is shown only to a key that may read ${tenant}.)`,
    { details: { streamPath, tenant, quotaTenantStreams, quotaTenantBytes } },
  );
}

/** Whether a stored event is what `written` would have stored: its type, key and payload. */
function storedAsWritten(event: AgentEvent, written: EventInput): boolean {
  return event.type === written.type && event.idempotencyKey === written.idempotencyKey && JSON.stringify(event.payload) === JSON.stringify(written.payload);
}

/**
 * Whether the events stored under a batch's keys are the batch's keyed events, key for key (a
 * duplicate answer carries only those: a batch's unkeyed events are in it as sent).
 */
function sameKeyedEvents(stored: readonly AgentEvent[], batch: readonly unknown[]): boolean {
  const sent = new Map<string, EventInput>();
  for (const input of batch) {
    const written = parseEventInput(input);
    if (written.idempotencyKey !== undefined) sent.set(written.idempotencyKey, written);
  }
  return stored.length === sent.size && stored.every((event) => {
    const written = event.idempotencyKey === undefined ? undefined : sent.get(event.idempotencyKey);
    return written !== undefined && storedAsWritten(event, written);
  });
}

/** Whether stored birth events are exactly what `batch` would have written (a retried create). */
function sameBirth(stored: readonly AgentEvent[], batch: readonly unknown[]): boolean {
  return stored.length === batch.length && batch.every((input, i) => storedAsWritten(stored[i]!, parseEventInput(input)));
}
