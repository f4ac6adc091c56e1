// `pnpm bench wire [--agents 40] [--turns 5] [--one-process]`: the NATS messages of a turn,
// counted. The stack as the peers bench runs it (nats-server, one reducer, one driver from their
// bundles, debounce 0; `--one-process`: the reducer runs its driver) and a client that, for every
// agent at once, appends a user message and waits until the reply is stored before the next, as
// a chat user does. A second connection subscribes to `>` and counts every message nats-server
// routes while the turns run, per turn: by subject (agent paths, partitions, hashes and inboxes
// folded), and, for what a connection sent with a reply inbox (publishes, key reservations,
// direct gets, work items), by the connection that sent it. A message counted on a subject
// includes JetStream's deliveries of a stored record to each consumer; failed publishes (a lost
// offset) count too, so races show up here as extra publishes and reads. Last, from nats-server's
// `/connz`, what each service's connection sent and was sent per turn (a message the server
// delivers to a connection costs that process a read and a parse even when it drops it).

import type { AgentEvent } from "@agentrt/contract";
import { userMessage } from "@agentrt/testing";
import { LIVE_TYPES_HEADER } from "@agentrt/streams/jetstream";
import { connect } from "@nats-io/transport-node";
import { startSystem } from "../../test/support/system.ts";
import { buildServiceBundles, numberArg } from "../support/run.ts";

const AGENTS = numberArg("agents", 40);
const TURNS = numberArg("turns", 5);
const ONE_PROCESS = process.argv.includes("--one-process");
const decoder = new TextDecoder();

// The services run from their bundles: build them from the current sources first.
buildServiceBundles();

const system = await startSystem({
  model: { defaultReply: () => ({ tokens: Array.from({ length: 22 }, (_, i) => ` t${i}`), tokensPerSecond: 2_000, usage: false }) },
  reducers: 1,
  drivers: ONE_PROCESS ? 0 : 1,
  fromBundles: true,
  env: { LOG_LEVEL: "error", LLM_CONCURRENCY: "128", ...(ONE_PROCESS ? { REDUCER_LLM_DRIVER: "in-process" } : {}) },
});

/** A subject with what varies per agent, partition, key or request folded into placeholders. */
function kindOf(subject: string): string {
  return subject
    .replace(/^_INBOX\..*/, "_INBOX.*")
    .replace(/^\$JS\.ACK\..*/, "$JS.ACK.*")
    .replace(/\.agents\.wire\.[A-Za-z0-9_-]+/, ".<path>")
    .replace(/\.[0-9a-f]{64}$/, ".<key>")
    .replace(/\.\d+(?=\.|$)/g, ".N")
    .replace(/\.[A-Z0-9]{22}(_\d+)?$/, ".<consumer>")
    .replace(/(work_claims\.llm\.)[^.]+/, "$1<driver>");
}

/** What a connection sent with a reply inbox: a record's publish is named by its first event's type. */
function requestOf(subject: string, data: Uint8Array): string {
  if (subject.startsWith("ev.")) {
    const record = JSON.parse(decoder.decode(data)) as { n: number; events: { type: string }[] };
    return `publish ${record.events[0]?.type ?? "?"}${record.n > 1 ? ` (+${record.n - 1})` : ""}`;
  }
  if (subject === "$JS.API.DIRECT.GET.AGENT_EVENTS") return `read records ${(JSON.parse(decoder.decode(data)) as { seq?: number }).seq === 1 ? "from the start" : "after a sequence"}`;
  if (subject.startsWith("$JS.API.DIRECT.GET.AGENT_EVENTS.")) return "read the last record";
  return kindOf(subject);
}

const bySubject = new Map<string, number>();
const bySender = new Map<string, Map<string, number>>();
const count = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
let counting = false;
const spy = await connect({ servers: system.natsUrl });
const everything = spy.subscribe(">");
void (async () => {
  for await (const m of everything) {
    if (!counting) continue;
    const live = m.headers?.get(LIVE_TYPES_HEADER);
    count(bySubject, live ? `${kindOf(m.subject)} [${live}]` : kindOf(m.subject));
    if (m.reply?.startsWith("_INBOX.") === true) {
      const sender = m.reply.split(".")[1] ?? "?";
      const own = bySender.get(sender) ?? new Map<string, number>();
      bySender.set(sender, own);
      count(own, requestOf(m.subject, m.data));
    }
  }
})();

// A turn ends when its reply is stored: the assistant item, seen on the store's feed.
const waiting = new Map<string, () => void>();
const feed = system.store.feed({});
void (async () => {
  for await (const batch of feed) {
    for (const e of batch.events as AgentEvent[]) if (e.type === "agents/context-added" && e.payload.role === "assistant") waiting.get(e.streamPath)?.();
  }
})();
const path = (agent: number) => `/agents/wire/a${agent}`;
for (let agent = 0; agent < AGENTS; agent++) {
  await system.store.append(path(agent), [
    { type: "agent/created", payload: {} },
    { type: "agent/configured", payload: { config: { llmRequestDebounceMs: 0 } } },
  ]);
}
await new Promise((resolve) => setTimeout(resolve, 1_000));
const connectionsBefore = await connections();
counting = true;
const started = Date.now();
await Promise.all(
  Array.from({ length: AGENTS }, async (_, agent) => {
    for (let turn = 0; turn < TURNS; turn++) {
      const stored = new Promise<void>((resolve) => waiting.set(path(agent), resolve));
      await system.store.append(path(agent), [userMessage(`turn ${turn}`)]);
      await stored;
    }
  }),
);
await new Promise((resolve) => setTimeout(resolve, 500));
counting = false;
const connectionsAfter = await connections();

const turns = AGENTS * TURNS;
const perTurn = (n: number) => (n / turns).toFixed(2);
/** Who sent from an inbox, from what it sends (a process's store, work publisher and KV clients use inboxes of their own). */
function senderName(sent: Map<string, number>): string {
  const kinds = [...sent.keys()];
  const reducer = ONE_PROCESS ? "reducer (with its driver)" : "reducer";
  if (kinds.some((k) => k.startsWith("publish agent/llm-request-requested"))) return reducer;
  if (kinds.some((k) => k.startsWith("publish agents/context-added (+"))) return "driver";
  if (kinds.some((k) => k.startsWith("publish agents/context-added"))) return "client";
  if (kinds.some((k) => k.startsWith("work.llm") || k.includes("agent_snapshots") || k.includes("agentrt_leases"))) return `${reducer}, work items, snapshots and leases`;
  if (kinds.some((k) => k.includes("work_claims"))) return "driver, work claims";
  if (kinds.some((k) => k.includes("CONSUMER.MSG.NEXT"))) return "a pull consumer";
  return "other";
}
/** Every client connection's message counters, by its name, from nats-server's monitoring port. */
async function connections(): Promise<Map<string, { sent: number; delivered: number }>> {
  const response = await fetch(`http://127.0.0.1:${system.nats?.monitorPort}/connz?limit=1000`);
  const connz = (await response.json()) as { connections: { cid: number; name?: string; in_msgs: number; out_msgs: number }[] };
  return new Map(connz.connections.map((c) => [`${c.name ?? "unnamed"} #${c.cid}`, { sent: c.in_msgs, delivered: c.out_msgs }]));
}
const services = [...connectionsAfter].filter(([name]) => /^(agent-reducer|llm-driver)/.test(name));
const lines = [
  `Command: \`pnpm bench wire --agents ${AGENTS} --turns ${TURNS}${ONE_PROCESS ? " --one-process" : ""}\` — ${new Date(started).toISOString().slice(0, 16).replace("T", " ")} UTC, ${turns} turns in ${((Date.now() - started) / 1000).toFixed(1)} s.`,
  "",
  "| messages per turn | subject |",
  "|---:|---|",
  ...[...bySubject].sort((a, b) => b[1] - a[1]).filter(([, n]) => n / turns >= 0.01).map(([k, n]) => `| ${perTurn(n)} | \`${k}\` |`),
  `| **${perTurn([...bySubject.values()].reduce((a, b) => a + b, 0))}** | all |`,
  "",
  "| sent per turn, with a reply inbox | connection | what |",
  "|---:|---|---|",
  ...[...bySender.values()].flatMap((sent) =>
    [...sent].sort((a, b) => a[0].localeCompare(b[0])).filter(([, n]) => n / turns >= 0.01).map(([k, n]) => `| ${perTurn(n)} | ${senderName(sent)} | ${k} |`),
  ),
  "",
  "| connection (nats-server's name #id) | sent per turn | delivered to it per turn |",
  "|---|---:|---:|",
  ...services.map(([name, after]) => {
    const before = connectionsBefore.get(name) ?? { sent: 0, delivered: 0 };
    return `| ${name} | ${perTurn(after.sent - before.sent)} | ${perTurn(after.delivered - before.delivered)} |`;
  }),
];
process.stdout.write(`${lines.join("\n")}\n`);
everything.unsubscribe();
await spy.close();
await system.stop();
process.exit(0);
