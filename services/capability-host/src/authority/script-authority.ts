// Script authority in the host (docs/security.md "Script authority"). A script acts for its
// agent with the agent's grant at the moment it was requested, further limited to the
// requesting key's scopes when the gateway stamped one (API-requested scripts). Every itx
// operation that touches a stream, an agent, files, KV or a provider names the (verb, path)
// it needs; `guardHostCalls` checks it with the contract's rule before the operation runs,
// and a refusal rejects the script's call like any other itx error.

import {
  type AgentEvent,
  applyGrantEvent,
  authorityRefusal,
  type GrantVerb,
  parseStreamPath,
  RESERVED_KEY_NAMESPACES,
  type ScopeLike,
  scopesAllow,
  type ScriptAuthority,
  streamPathProblem,
  UNBORN_GRANT,
} from "@agentrt/contract";
import type { Caller } from "@agentrt/capability-sdk";
import type { HostCallHandler } from "../sandbox/index.ts";

/** A script's itx call outside its grant; the message names the call, the path and the grant. */
export class ItxGrantError extends Error {
  override readonly name = "ItxGrantError";
  readonly code = "grant_refused";
}

/**
 * The authority of the script requested at `requestOffset` of one agent's events: the grant
 * folded before it, the requester stamped on it. Every event names its stream, the agent.
 *
 * The agent's preamble runs at the top of every script. An entry a script set without an
 * operating key (a script the model wrote may set its agent's preamble) would otherwise run with
 * the operating key of the next operator's script, and steer the agent in that key's name: so
 * while such an entry is in force, a script keeps its requester's other verbs but not `operate`
 * (`operateWithheld` says why).
 */
export function authorityAt(events: readonly AgentEvent[], requestOffset: number): ScriptAuthority {
  const agentPath = events[0]?.streamPath ?? "/";
  let state = UNBORN_GRANT;
  /** Runs that could operate on the agent (their key may, and nothing withheld it), by execution id. */
  const operating = new Set<string>();
  /** Preamble entries in force that a script without an operating key set, by key. */
  const setWithoutOperate = new Set<string>();
  for (const event of events) {
    if (event.offset >= requestOffset) {
      if (event.offset === requestOffset && event.type === "capability-host/script-run-requested" && event.payload.requester !== undefined) {
        const requester = event.payload.requester;
        if (setWithoutOperate.size === 0 || !scopesAllow(requester.scopes, "operate", agentPath)) return { agentPath, grant: state.grant, requester };
        return {
          agentPath,
          grant: state.grant,
          requester: { keyId: requester.keyId, scopes: withoutOperate(requester.scopes) },
          operateWithheld: `the agent's preamble holds code a script without an operating key set (${[...setWithoutOperate].map((k) => JSON.stringify(k)).join(", ")}), which runs in this script; remove it (capability-host/preamble-removed) to operate from scripts`,
        };
      }
      break;
    }
    state = applyGrantEvent(state, event);
    // A run its key let operate, but that ran planted preamble code, could not: what it set is
    // not an operator's (a planted entry that set itself again had passed for one).
    if (event.type === "capability-host/script-run-requested" && event.payload.requester !== undefined && scopesAllow(event.payload.requester.scopes, "operate", agentPath)) {
      if (setWithoutOperate.size === 0) operating.add(event.payload.executionId);
    } else if (event.type === "capability-host/preamble-set") {
      const run = scriptRunOfKey(event.idempotencyKey);
      if (run !== undefined && !operating.has(run)) setWithoutOperate.add(event.payload.key);
      else setWithoutOperate.delete(event.payload.key);
    } else if (event.type === "capability-host/preamble-removed") setWithoutOperate.delete(event.payload.key);
  }
  return { agentPath, grant: state.grant };
}

/** The execution id of a script's own append (`capability-host/agent-append@<id>#<n>`), or undefined. */
function scriptRunOfKey(key: string | undefined): string | undefined {
  const prefix = RESERVED_KEY_NAMESPACES.itxAgentAppend.prefix;
  if (key === undefined || !key.startsWith(prefix)) return undefined;
  const hash = key.lastIndexOf("#");
  return hash > prefix.length ? key.slice(prefix.length, hash) : undefined;
}

/** Scopes without `operate` (`admin`, which implies it, becomes read and append). */
function withoutOperate(scopes: readonly ScopeLike[]): ScopeLike[] {
  return scopes.map((s) => ({ prefix: s.prefix, verbs: [...new Set(s.verbs.flatMap((v) => (v === "admin" ? ["read", "append"] : v === "operate" ? [] : [v])))] }));
}

/** `itx.agents.get(p)`: an absolute path, or a name relative to the calling agent. */
export function resolveAgentPath(agentPath: string, raw: unknown): string {
  if (typeof raw !== "string") return parseStreamPath(raw);
  return parseStreamPath(raw.startsWith("/") ? raw : `${agentPath}/${raw}`);
}

interface Access {
  readonly verb: GrantVerb;
  readonly path: string;
  readonly call: string;
}

/** What one itx operation needs, or null when it touches no agent data (docs, unknown ops). */
export function accessOf(agentPath: string, op: string, args: readonly unknown[]): Access | null {
  const own = (verb: GrantVerb, call: string): Access => ({ verb, path: agentPath, call });
  switch (op) {
    case "chat.sendMessage":
      return own("append", "itx.chat.sendMessage()");
    case "agent.append":
      return own("append", "itx.agent.append()");
    case "streams.read":
    case "streams.getEvent": {
      // An invalid path is left to the operation, which rejects it with the path rule.
      if (streamPathProblem(args[0]) !== null) return null;
      const path = args[0] as string;
      return { verb: "read", path, call: `itx.streams.get(${JSON.stringify(path)}).${op === "streams.read" ? "read" : "getEvent"}()` };
    }
    case "agents.create":
    case "agents.message": {
      let path: string;
      try {
        path = resolveAgentPath(agentPath, args[0]);
      } catch {
        return null;
      }
      return { verb: "append", path, call: `itx.agents.get(${JSON.stringify(args[0])}).${op === "agents.create" ? "create" : "message"}()` };
    }
    case "kv.get":
    case "kv.list":
      return own("read", `itx.${op}()`);
    case "kv.set":
    case "kv.delete":
      return own("append", `itx.${op}()`);
    case "files.bytes":
    case "files.text":
      return own("read", `itx.files.get(${JSON.stringify(args[0])}).${op.slice("files.".length)}()`);
    case "files.list":
      return own("read", "itx.files.list()");
    case "files.write":
      return own("append", "itx.files.write()");
    case "capabilityHost.getScriptResult":
      return own("read", "itx.capabilityHost.getScriptResult()");
    case "provider.call": {
      // A provider acts for the agent outside the event store: the script must be able to act
      // as the agent (append to its own stream); the provider receives the authority to scope itself.
      const [namespace, method] = args;
      return own("append", `itx.${String(namespace)}.${String(method)}()`);
    }
    default:
      return null;
  }
}

/** Refuses any event a script appends that would change a grant: grants come from keys, through the gateway. */
function grantChangeOf(op: string, args: readonly unknown[]): string | null {
  if (op !== "agent.append") return null;
  const payload = (args[0] as { payload?: unknown } | null | undefined)?.payload;
  if (typeof payload === "object" && payload !== null && "grant" in payload) {
    return "itx.agent.append(): scripts may not set an agent's grant (grants are given by API keys through the gateway)";
  }
  return null;
}

/** Wraps the itx handler so that every call is checked against the script's authority first. */
export function guardHostCalls(handler: HostCallHandler, authority: ScriptAuthority): HostCallHandler {
  return async (op, args) => {
    const grantChange = grantChangeOf(op, args);
    if (grantChange !== null) throw new ItxGrantError(grantChange);
    const access = accessOf(authority.agentPath, op, args);
    if (access !== null) {
      const refusal = authorityRefusal(authority, access.verb, access.path);
      if (refusal !== null) throw new ItxGrantError(`${access.call}: ${refusal}`);
    }
    return handler(op, args);
  };
}

/** What a provider is told of the calling script's authority (the SDK's `caller.authority`). */
export function providerAuthority(authority: ScriptAuthority): NonNullable<Caller["authority"]> {
  // An exact entry (a sub-agent's on its creator) is not forwarded: the providers' protocol has
  // prefixes only, and as one it would cover the creator's whole subtree.
  const copy = (scopes: ScriptAuthority["grant"]) => scopes.filter((s) => s.exact !== true).map((s) => ({ prefix: s.prefix, verbs: [...s.verbs] }));
  const requester = authority.requester;
  return { grant: copy(authority.grant), ...(requester === undefined ? {} : { requester: { keyId: requester.keyId, scopes: copy(requester.scopes) } }) };
}
