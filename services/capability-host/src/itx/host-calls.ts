// The host side of `itx`: every `await itx.x.y(...)` in a script arrives here as (op, args)
// of JSON values, is validated (parse at the boundary), and acts on behalf of the calling
// agent only. Errors thrown here reject the script's promise with their message.

import { createHash } from "node:crypto";
import {
  type AgentEvent,
  creatorGrant,
  decideScriptAppend,
  type EventInput,
  type EventType,
  EVENT_URI_PREFIX,
  idempotencyKeys,
  parseEventInput,
  parseStreamPath,
  SCRIPT_OWN_OPERATE,
  scopesAllow,
  withBirthGrant,
} from "@agentrt/contract";
import type { Caller } from "@agentrt/capability-sdk";
import { firstUnbornInput } from "@agentrt/agent-core";
import type { EventStore } from "@agentrt/streams";
import type { HostCallHandler } from "../sandbox/index.ts";
import type { ProviderRegistry } from "../providers/registry.ts";
import { type AgentFiles, type AgentKv, ItxInputError, shownInput } from "./agent-storage.ts";
import type { DocsIndex } from "./docs-index.ts";
import type { ListingGate } from "./listing-budget.ts";
import { resultSpillPath } from "../codemode.ts";
import { ItxGrantError, resolveAgentPath } from "../authority/script-authority.ts";

/** The most event JSON one `itx.streams.get(p).read()` returns (at least one event; the script reads on from the last offset + 1). */
export const ITX_READ_MAX_BYTES = 4 * 1024 * 1024;

export interface ItxHostDeps {
  readonly store: EventStore;
  readonly kv: AgentKv;
  readonly files: AgentFiles;
  readonly providers: ProviderRegistry;
  readonly docs: DocsIndex;
  /** Typechecks code in the caller's scope (itx.docs.typecheck). */
  readonly typecheck: (code: string) => Promise<{ ok: boolean; problems: string[] }>;
  readonly providerCallTimeoutMs: number;
  /** The birth batch of a sub-agent (the project worker's `birthBatch`), when a project is configured. */
  readonly birthBatch?: (streamPath: string) => EventInput[];
  /** Holds listings (itx.kv.list, itx.files.list) to their tenant's budget, one per agent at a time (listing-budget.ts). */
  readonly listings?: ListingGate;
}

export interface ScriptCaller {
  readonly agentPath: string;
  readonly executionId: string;
  /** Forwarded to providers so they can scope what they do (authority/). */
  readonly authority?: Caller["authority"];
  /** Why the script may not operate although its requesting key may (ScriptAuthority.operateWithheld). */
  readonly operateWithheld?: string;
}

/** The sending agent's path in a key of a message to another agent (idempotencyKeys.itxAgentMessage). */
export const senderDigest = (agentPath: string): string => createHash("sha256").update(agentPath).digest("hex").slice(0, 32);

const str = (value: unknown, what: string): string => {
  if (typeof value !== "string") throw new ItxInputError(`${what} must be a string`);
  return value;
};

/**
 * The longest `itx.docs.search` query: a few words, with room. The search runs on the host's
 * thread, term against document: an 18 M-character query held it 6 s, long enough for the other
 * hosts to take this one for dead and settle its running scripts orphaned (red-team).
 */
export const MAX_DOCS_QUERY_CHARS = 1_000;

function docsQuery(value: unknown): string {
  const q = str(value, "docs.search({q}): q");
  if (q.length > MAX_DOCS_QUERY_CHARS) throw new ItxInputError(`docs.search({q}): q has ${q.length} characters; a query is at most ${MAX_DOCS_QUERY_CHARS} (a few words)`);
  return q;
}

export function createHostCallHandler(deps: ItxHostDeps, caller: ScriptCaller): HostCallHandler {
  let sequence = 0;
  const key = (builder: (executionId: string, sequence: number) => string): string => builder(caller.executionId, ++sequence);
  const resolvePath = (path: unknown): string => resolveAgentPath(caller.agentPath, str(path, "the agent path"));
  const listing = <T>(list: () => Promise<readonly T[]>): Promise<readonly T[]> => (deps.listings === undefined ? list() : deps.listings.run(caller.agentPath, list));

  return async (op, args) => {
    switch (op) {
      case "chat.sendMessage": {
        const message = str(args[0], "itx.chat.sendMessage(text): text");
        await deps.store.append(caller.agentPath, [{ type: "agents/web-message-sent", payload: { message }, idempotencyKey: key(idempotencyKeys.itxWebMessage) }]);
        return undefined;
      }
      case "agent.append":
        return appendOwn(deps.store, caller, args[0], key(idempotencyKeys.itxAgentAppend));
      case "streams.getEvent": {
        const path = parseStreamPath(args[0]);
        const offset = (args[1] as { offset?: unknown } | undefined)?.offset;
        if (typeof offset !== "number" || !Number.isInteger(offset) || offset < 1) throw new ItxInputError("getEvent({offset}): offset must be an integer ≥ 1");
        const [event] = await deps.store.read(path, { fromOffset: offset, limit: 1 });
        return event?.offset === offset ? event : null;
      }
      case "streams.read": {
        const path = parseStreamPath(args[0]);
        const opts = (args[1] ?? {}) as { fromOffset?: unknown; limit?: unknown };
        // Given, each is a positive integer: Infinity and NaN cross as null, and used to read from offset 1.
        const positive = (value: unknown, what: string): number | undefined => {
          if (value === undefined) return undefined;
          if (typeof value !== "number" || !Number.isInteger(value) || value < 1) throw new ItxInputError(`read({${what}}): ${what} must be an integer ≥ 1, got ${JSON.stringify(value)}`);
          return value;
        };
        const fromOffset = positive(opts.fromOffset, "fromOffset") ?? 1;
        const limit = Math.min(1000, positive(opts.limit, "limit") ?? 100);
        // Bounded by bytes too: a thousand events near the event size cap would be a gigabyte in this process.
        return deps.store.read(path, { fromOffset, limit, maxBytes: ITX_READ_MAX_BYTES });
      }
      case "agents.create": {
        const path = resolvePath(args[0]);
        if ((await deps.store.lastOffset(path)) > 0) return { path, created: false };
        // The sub-agent may answer its creator (authority/): the grant rides on its agent/created.
        const batch = withBirthGrant<unknown>(deps.birthBatch?.(path) ?? [
          { type: "agent/created", payload: { createdBy: { type: "agent", path: caller.agentPath } }, idempotencyKey: idempotencyKeys.scriptCreatedAgent() },
        ], creatorGrant(caller.agentPath));
        const result = await deps.store
          .append(path, batch, { expectedLastOffset: 0 })
          .catch((error: unknown) => {
            if (error instanceof Error && "code" in error && error.code === "conflict") return { status: "duplicate" as const };
            throw error;
          });
        return { path, created: result.status === "committed" };
      }
      case "agents.message": {
        const path = resolvePath(args[0]);
        const content = str(args[1], "message(text): text");
        const batch: EventInput[] = [
          {
            type: "agents/context-added",
            payload: { role: "developer", content, actor: { type: "agent", path: caller.agentPath } },
            idempotencyKey: key((executionId, sequence) => idempotencyKeys.itxAgentMessage(senderDigest(caller.agentPath), executionId, sequence)),
          },
        ];
        // The core's birth rule, as the gateway applies it: sent to a path with no agent, the
        // message became its stream's first event, and create() there answered created: false for good.
        if (firstUnbornInput(batch, await isBorn(deps.store, path)) !== null) {
          const named = shownInput(args[0]);
          throw new ItxInputError(`itx.agents.get(${named}).message(): no agent at ${path}; create it first with itx.agents.get(${named}).create()`);
        }
        await deps.store.append(path, batch);
        return undefined;
      }
      case "kv.get":
        return deps.kv.get(caller.agentPath, args[0]);
      case "kv.set":
        return deps.kv.set(caller.agentPath, args[0], args[1]);
      case "kv.delete":
        return deps.kv.delete(caller.agentPath, args[0]);
      case "kv.list":
        return listing(() => deps.kv.list(caller.agentPath, typeof args[0] === "string" ? args[0] : ""));
      case "files.bytes": {
        // As base64, decoded in the sandbox (bootstrap.ts): an array of numbers held several times the file's size here.
        const bytes = await deps.files.bytes(caller.agentPath, args[0]);
        return { __base64: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64") };
      }
      case "files.text":
        return new TextDecoder().decode(await deps.files.bytes(caller.agentPath, args[0]));
      case "files.write":
        return deps.files.write(caller.agentPath, args[0], toBytes(args[1]));
      case "files.list":
        return listing(() => deps.files.list(caller.agentPath, typeof args[0] === "string" ? args[0] : ""));
      case "capabilityHost.getScriptResult":
        return getScriptResult(deps, caller.agentPath, str(args[0], "getScriptResult(id): id"));
      case "docs.search":
        return deps.docs.search(docsQuery((args[0] as { q?: unknown } | undefined)?.q));
      case "docs.typecheck":
        return deps.typecheck(str((args[0] as { code?: unknown } | undefined)?.code, "docs.typecheck({code}): code"));
      case "provider.call": {
        const [namespace, method, callArgs] = args as [string, string, unknown[]];
        return deps.providers.call(namespace, method, callArgs, caller, deps.providerCallTimeoutMs);
      }
      default:
        throw new ItxInputError(`unknown itx operation "${op}"`);
    }
  };
}

/**
 * `itx.agent.append`: held to the contract's rule for scripts (`decideScriptAppend`): no machinery
 * events, no model output (an assistant reply to the open request would be run as the model's
 * script, with the agent's whole grant), no key in a namespace the services build theirs in, and
 * steering the agent only when the key that requested the script may operate on it.
 */
async function appendOwn(store: EventStore, caller: ScriptCaller, raw: unknown, fallbackKey: string): Promise<AgentEvent> {
  const input = typeof raw === "object" && raw !== null ? { ...(raw as Record<string, unknown>) } : raw;
  if (typeof input === "object" && input !== null && typeof (input as { type?: unknown }).type === "string") {
    const record = input as { type: string; idempotencyKey?: unknown };
    if (record.type.startsWith(EVENT_URI_PREFIX)) record.type = record.type.slice(EVENT_URI_PREFIX.length);
    const requester = caller.authority?.requester;
    const mayOperate = requester !== undefined && scopesAllow(requester.scopes, "operate", caller.agentPath);
    const decision = decideScriptAppend(record, mayOperate);
    if (!decision.allowed) {
      if (caller.operateWithheld !== undefined && decideScriptAppend(record, true).allowed) {
        throw new ItxGrantError(`itx.agent.append(): "${record.type}" steers the agent (operate), and this script may not operate: ${caller.operateWithheld}.`);
      }
      throw decision.error;
    }
    // The host keys a preamble change itself: the key names the script that made it, and a
    // later script's authority depends on whether that one could operate (authority/).
    if (SCRIPT_OWN_OPERATE.includes(record.type as EventType) && record.idempotencyKey !== undefined) {
      throw new ItxInputError(`itx.agent.append(): a preamble change is keyed by the host, which records the script that made it; leave out idempotencyKey.`);
    }
    record.idempotencyKey ??= fallbackKey;
  }
  const event = parseEventInput(input);
  const result = await store.append(caller.agentPath, [event]);
  return result.events[0]!;
}

/** Whether an agent lives at `path`: its stream begins with its birth (`create` commits one only on an empty stream). */
async function isBorn(store: EventStore, path: string): Promise<boolean> {
  const [first] = await store.read(path, { fromOffset: 1, limit: 1 });
  return first?.type === "agent/created";
}

/**
 * A script's settlement, found by its key (`capability-host/script-run-settled@<id>`, the only
 * key the host settles with): one index look-up and one record, however long the stream. It
 * used to read the whole stream into memory on every call; a few parallel calls on a stream of
 * 200 MB ran the host out of memory, orphaning every script it was running.
 */
async function getScriptResult(deps: ItxHostDeps, agentPath: string, executionId: string): Promise<unknown> {
  const event = await deps.store.findKeyed(agentPath, idempotencyKeys.scriptRunSettled(executionId));
  if (event?.type !== "capability-host/script-run-settled" || event.payload.executionId !== executionId) return null;
  const settlement = event.payload.settlement;
  if (settlement.status === "succeeded" && settlement.oversized !== undefined) {
    for (const ext of ["json", "txt"]) {
      const path = resultSpillPath(executionId, ext === "txt" ? "" : null);
      const text = await deps.files.bytes(agentPath, path).then((b) => new TextDecoder().decode(b), () => undefined);
      if (text !== undefined) return { status: "succeeded", result: ext === "txt" ? text : (JSON.parse(text) as unknown) };
    }
  }
  return settlement;
}

/**
 * Base64 as the sandbox writes it (bootstrap.ts `toBase64`): whole groups of four, padded. One
 * flat character class (with the length checked apart): a group pattern repeated a million times
 * overflowed the regular expression engine's stack.
 */
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const isBase64 = (text: string): boolean => text.length % 4 === 0 && BASE64.test(text);

function toBytes(content: unknown): Uint8Array {
  if (typeof content === "string") return new TextEncoder().encode(content);
  // A Uint8Array crosses as base64 (bootstrap.ts); a plain object of that shape is the same bytes.
  const base64 = (content as { __base64?: unknown } | null)?.__base64;
  if (typeof base64 === "string" && isBase64(base64)) return Buffer.from(base64, "base64");
  throw new ItxInputError("itx.files.write(path, content): content must be a string or a Uint8Array");
}
