// LangGraph.js as its docs build a chat agent: a StateGraph over MessagesAnnotation with one
// model node, compiled with the PostgresSaver checkpointer; one thread per agent, invoked once
// per turn. `invoke` returns once the run's checkpoints (the reply among them) are written, so
// that is "reply durably stored". LangGraph has no moment at which the input alone is durable
// before the model call. A run is a function call in the caller's process: if that process
// dies mid-reply nothing re-runs the turn; the kill column checks that.

import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import pg from "pg";
import { AIMessage, type BaseMessage } from "@langchain/core/messages";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import { callModel, repliedMarker } from "../model-call.ts";
import { type Contender, nowMs, runContender, until } from "../runner.ts";
import { backendPids, createDatabase, dropDatabase, fillPool } from "../postgres.ts";

const POOL = 20;

async function buildGraph(url: string, modelUrl: string) {
  const pool = new pg.Pool({ connectionString: url, max: POOL, idleTimeoutMillis: 0 });
  const checkpointer = new PostgresSaver(pool);
  const client = new OpenAI({ baseURL: modelUrl, apiKey: "test" });
  const role = (m: BaseMessage) => (m.getType() === "human" ? ("user" as const) : ("assistant" as const));
  const graph = new StateGraph(MessagesAnnotation)
    .addNode("model", async (state) => {
      const text = await callModel(client, state.messages.map((m) => ({ role: role(m), content: String(m.content) })));
      return { messages: [new AIMessage(text)] };
    })
    .addEdge(START, "model")
    .addEdge("model", END)
    .compile({ checkpointer });
  return { pool, checkpointer, graph };
}

const childArgs = process.argv.indexOf("--child");
if (childArgs >= 0) {
  // The kill column's handler process: runs one turn and is SIGKILLed while the model streams.
  const [url, modelUrl, agent, marker] = process.argv.slice(childArgs + 1);
  const { graph } = await buildGraph(url!, modelUrl!);
  await graph.invoke({ messages: [{ role: "user", content: marker! }] }, { configurable: { thread_id: agent! } });
  process.exit(0);
} else {
  await runContender(async (config) => {
    const database = `agentrt_peers_langgraph_${process.pid}`;
    const url = await createDatabase(database);
    const { pool, checkpointer, graph } = await buildGraph(url, config.modelUrl);
    await checkpointer.setup();
    const hasReply = async (agent: string, marker: string) => {
      const state = await graph.getState({ configurable: { thread_id: agent } });
      const messages = (state.values as { messages?: BaseMessage[] }).messages ?? [];
      return messages.some((m) => m.getType() === "ai" && repliedMarker(String(m.content)) === marker);
    };
    const contender: Contender = {
      async pids() {
        await fillPool(pool, POOL);
        return backendPids(database);
      },
      async createAgent() {},
      async turn(agent, marker) {
        await graph.invoke({ messages: [{ role: "user", content: marker }] }, { configurable: { thread_id: agent } });
        return { storedAt: nowMs() };
      },
      async killMidReply(agent, marker, modelReceived) {
        const child = spawn(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), "--child", url, config.modelUrl, agent, marker], { stdio: "ignore" });
        const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
        await modelReceived;
        await new Promise((r) => setTimeout(r, 100));
        child.kill("SIGKILL");
        await exited;
        const stored = await until(() => hasReply(agent, marker), 10_000, 100);
        return stored ? { note: "stored after the kill (unexpected)" } : { note: "no automatic re-run (no reply 10 s after the kill)" };
      },
      async stop() {
        await pool.end().catch(() => undefined);
        await dropDatabase(database).catch(() => undefined);
      },
    };
    return contender;
  });
}
