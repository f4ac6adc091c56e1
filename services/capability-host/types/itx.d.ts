// The `itx` capability surface: what a codemode script can do. The model reads this file
// (itx.docs.search finds it) and the capability host typechecks every script against it.
// A script is `async (itx) => { ... }`; only JSON values cross the boundary.
// Capability providers add namespaces at run time by merging into `interface Itx`, e.g.
//   interface Itx { repo: { listPulls(args: { state?: "open" | "closed" | "all" }): Promise<Pull[]> } }

/** Any JSON value: the only thing that crosses between a script and the host. */
type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** An event as stored on an agent stream. */
interface ItxStoredEvent {
  streamPath: string;
  offset: number;
  type: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- payload shapes vary by type; scripts read fields freely
  payload: any;
  createdAt: string;
  idempotencyKey?: string;
}

/** An event to append: `type` is the short name ("agent/summary-updated") or its URI
 * ("events.iterate.com/agent/summary-updated"); the payload is validated against its schema. */
interface ItxEventInput {
  type: string;
  payload: JsonValue;
  idempotencyKey?: string;
}

interface ItxChat {
  /** Sends a visible web-chat message to the user (appends `agents/web-message-sent`). */
  sendMessage(text: string): Promise<void>;
}

interface ItxAgent {
  /** This agent's stream path, e.g. "/agents/web/demo". */
  readonly path: string;
  /** Appends one validated event to this agent's own stream; returns it as stored. */
  append(event: ItxEventInput): Promise<ItxStoredEvent>;
}

interface ItxStreamHandle {
  /** One event by offset, or null when there is none. */
  getEvent(args: { offset: number }): Promise<ItxStoredEvent | null>;
  /** Durable events from `fromOffset` (default 1), at most `limit` (default 100, max 1000) and at most 4 MiB of event JSON (at least one event): read on from the last offset + 1. */
  read(args?: { fromOffset?: number; limit?: number }): Promise<ItxStoredEvent[]>;
}

interface ItxStreams {
  /** Any stream inside this agent's grant (its own path and below, plus granted prefixes); reads
   * outside it are refused with an error naming the path and the grant. */
  get(path: string): ItxStreamHandle;
}

interface ItxAgentHandle {
  readonly path: string;
  /** Creates the agent (its birth batch) if it does not exist yet; returns its path. */
  create(): Promise<{ path: string; created: boolean }>;
  /** Sends a message to that agent: developer context with actor {type: "agent", path: <you>}. Refused when no agent lives there yet: create() it first. */
  message(text: string): Promise<void>;
}

interface ItxAgents {
  /** A sub-agent by path; a relative name ("researcher") lives under your own path. Creating or
   * messaging an agent outside this agent's grant is refused with an error naming the grant. */
  get(path: string): ItxAgentHandle;
}

/** Agent-scoped key-value store (NATS KV). Keys: letters, digits, "-", "_", "/", "=", ".". The agent's
 * values hold at most 64 MiB in 10 000 keys (unless the operator set other bounds); a set past that is
 * refused, naming the usage and the quota. */
interface ItxKv {
  get(key: string): Promise<JsonValue | null>;
  set(key: string, value: JsonValue): Promise<void>;
  delete(key: string): Promise<void>;
  /** Keys starting with the prefix; more than 10 000 is refused (list a longer prefix). */
  list(prefix?: string): Promise<string[]>;
}

interface ItxFileHandle {
  readonly path: string;
  bytes(): Promise<Uint8Array>;
  text(): Promise<string>;
}

/** The agent's workspace files (NATS object store). Paths are relative: "notes/today.md", at most
 * 1 024 characters. A file of at most 4 MiB may be written or read; a larger one is refused, naming its size.
 * The workspace holds at most 256 MiB in 10 000 files (unless the operator set other bounds); a write
 * past that is refused, naming the usage and the quota. */
interface ItxFiles {
  get(path: string): ItxFileHandle;
  write(path: string, content: string | Uint8Array): Promise<{ path: string; size: number }>;
  /** Files whose path starts with the prefix; more than 10 000 is refused (list a longer prefix). */
  list(prefix?: string): Promise<{ path: string; size: number }[]>;
}

interface ItxCapabilityHost {
  /** The settlement of an earlier script of this agent (the full result, even when oversized). */
  getScriptResult(executionId: string): Promise<
    | { status: "succeeded"; result?: JsonValue }
    | { status: "failed"; error: string; failureKind: string; phase: string }
    | null
  >;
}

interface ItxDocs {
  /** Searches these declarations, provider declarations and examples. */
  search(args: { q: string }): Promise<{ title: string; snippet: string }[]>;
  /** Typechecks a script against this scope without running it. */
  typecheck(args: { code: string }): Promise<{ ok: boolean; problems: string[] }>;
}

interface Itx {
  chat: ItxChat;
  agent: ItxAgent;
  streams: ItxStreams;
  agents: ItxAgents;
  kv: ItxKv;
  files: ItxFiles;
  capabilityHost: ItxCapabilityHost;
  docs: ItxDocs;
  /** Provider namespaces registered at run time (their declarations merge into Itx). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- unknown namespaces run unchecked (providers extend itx at run time)
  [namespace: string]: any;
}

declare const itx: Itx;
