// `pnpm agents create|send|state|request|list`: one-shot calls to the gateway's HTTP API.

import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { callGateway, clientEnv, encPath, listAllAgents, parseArgs, retryUnknownOutcome, type ClientEnv } from "../gateway-client.ts";

type Out = (text: string) => void;

export async function createCommand(args: readonly string[], out: Out): Promise<number> {
  const { positional, flags } = parseArgs(args, ["prompt-file", "project"]);
  const [streamPath] = positional;
  if (!streamPath) throw new Error("usage: agents create PATH [--prompt-file FILE] [--project NAME]");
  const body = {
    streamPath,
    ...(typeof flags["prompt-file"] === "string" ? { promptFile: await readFile(flags["prompt-file"], "utf8") } : {}),
    ...(typeof flags.project === "string" ? { project: flags.project } : {}),
  };
  const res = await callGateway<{ status: string; events: { offset: number; type: string }[] }>(clientEnv(), "POST", "/v1/agents", body);
  out(`${res.status === "committed" ? "created" : "already created"} ${streamPath} (${res.events.length} birth events, @${res.events[0]?.offset}..@${res.events.at(-1)?.offset})\n`);
  return 0;
}

export async function sendCommand(args: readonly string[], out: Out): Promise<number> {
  const { positional, flags } = parseArgs(args, [], ["interrupt"]);
  const [streamPath, ...words] = positional;
  if (!streamPath || words.length === 0) throw new Error("usage: agents send PATH MESSAGE... [--interrupt]");
  const payload = {
    role: "user",
    content: words.join(" "),
    actor: { type: "user", origin: "web" },
    ...(flags.interrupt === true ? { llmRequestPolicy: { behaviour: "interrupt-current-request" } } : {}),
  };
  // The gateway refuses a message to a path with no agent (404 "no agent at PATH; create it
  // with `agents create PATH`"), so a typo never creates a stream that blocks `create`.
  // One key for this message: sent again when no answer came back (the gateway restarting, NATS
  // failing over), it is stored once, and the answer says where.
  const idempotencyKey = `cli/send/${randomUUID()}`;
  const env = clientEnv();
  const res = await retryUnknownOutcome(
    () => callGateway<{ status: string; events: { offset: number }[] }>(env, "POST", `/v1/streams/${encPath(streamPath)}/events`, { events: [{ type: "agents/context-added", payload, idempotencyKey }] }),
    (error, delayMs) => process.stderr.write(`no answer for the message (${error.message}); sending it again in ${delayMs / 1000} s with the same idempotency key\n`),
  );
  out(`sent @${res.events[0]?.offset}${res.status === "duplicate" ? " (it had landed before the answer was lost)" : ""}\n`);
  return 0;
}

export async function stateCommand(args: readonly string[], out: Out): Promise<number> {
  const [streamPath] = args;
  if (!streamPath) throw new Error("usage: agents state PATH");
  const res = await callGateway<unknown>(clientEnv(), "GET", `/v1/agents/${encPath(streamPath)}/state`);
  out(`${JSON.stringify(res, null, 2)}\n`);
  return 0;
}

interface UsageReport {
  streamPath: string;
  events: number;
  bytes: number;
  quota: { events: number; bytes: number };
  tenant: { prefix: string; streams: number; bytes: number; quota: { streams: number; bytes: number } } | null;
}

/** `1.5 MiB`: bytes in the largest binary unit that keeps the number at least 1. */
function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`;
}

const percent = (used: number, quota: number) => `${((100 * used) / quota).toFixed(1)} %`;

export async function usageCommand(args: readonly string[], out: Out): Promise<number> {
  const streamPath = args.find((arg) => !arg.startsWith("--"));
  if (!streamPath) throw new Error("usage: agents usage PATH [--json]");
  const res = await callGateway<UsageReport>(clientEnv(), "GET", `/v1/agents/${encPath(streamPath)}/usage`);
  if (args.includes("--json")) {
    out(`${JSON.stringify(res, null, 2)}\n`);
    return 0;
  }
  out(
    `${res.streamPath}: ${res.events} of ${res.quota.events} events (${percent(res.events, res.quota.events)}), ` +
      `${formatBytes(res.bytes)} of ${formatBytes(res.quota.bytes)} (${percent(res.bytes, res.quota.bytes)})\n`,
  );
  if (res.tenant !== null) {
    const t = res.tenant;
    out(
      `tenant ${t.prefix}: ${t.streams} of ${t.quota.streams} streams (${percent(t.streams, t.quota.streams)}), ` +
        `${formatBytes(t.bytes)} of ${formatBytes(t.quota.bytes)} (${percent(t.bytes, t.quota.bytes)})\n`,
    );
  }
  return 0;
}

export async function listCommand(args: readonly string[], out: Out): Promise<number> {
  const [prefix] = args;
  type Listed = { streamPath: string; lastOffset: number; title: string | null; activity: string | null; waitingFor: string | null; openRequestOffset: number | null };
  for await (const a of listAllAgents<Listed>(clientEnv(), prefix)) {
    const bits = [a.title, a.activity && `activity: ${a.activity}`, a.waitingFor && `waiting for ${a.waitingFor}`, a.openRequestOffset && `request @${a.openRequestOffset} open`];
    out(`${a.streamPath}  @${a.lastOffset}  ${bits.filter(Boolean).join(" · ")}\n`);
  }
  return 0;
}

const REQUEST_USAGE = "usage: agents request PATH (OFFSET | --last) [--json]";

/** The offset of the agent's latest `agent/llm-request-requested`, from its folded state. */
async function latestRequestOffset(env: ClientEnv, streamPath: string): Promise<number> {
  const res = await callGateway<{ state: { lastLlmRequestOffset?: unknown } }>(env, "GET", `/v1/agents/${encPath(streamPath)}/state`);
  const offset = res.state.lastLlmRequestOffset;
  if (typeof offset !== "number" || !Number.isInteger(offset) || offset <= 0) {
    throw new Error(`${streamPath} has no model request yet; send it a message first (agents send ${streamPath} "…")`);
  }
  return offset;
}

/** `agents request PATH N | --last`: exactly what the model saw for the request at offset N (or the latest). */
export async function requestCommand(args: readonly string[], out: Out): Promise<number> {
  const { positional, flags } = parseArgs(args, [], ["json", "last"]);
  const [streamPath, given] = positional;
  const last = flags.last === true;
  if (!streamPath || (last ? given !== undefined : given === undefined || !/^\d+$/.test(given))) throw new Error(REQUEST_USAGE);
  const env = clientEnv();
  const offset = last ? String(await latestRequestOffset(env, streamPath)) : given!;
  const res = await callGateway<{ model: string; requestedAt: string; messages: { role: string; content: string }[] }>(
    env,
    "GET",
    `/v1/agents/${encPath(streamPath)}/requests/${offset}`,
  );
  if (flags.json === true) {
    out(`${JSON.stringify(res, null, 2)}\n`);
    return 0;
  }
  out(`request @${offset} · ${res.model} · requested at ${res.requestedAt} · ${res.messages.length} messages\n`);
  res.messages.forEach((m, i) => out(`\n── [${i}] ${m.role} ${"─".repeat(40)}\n${m.content}\n`));
  return 0;
}
