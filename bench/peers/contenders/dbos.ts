// DBOS Transact as its docs build a durable chat turn: one workflow per turn (its id names the
// agent and the turn), the model call a step (checkpointed), the conversation in an app table
// written by a second step; the system database and the app table share a throwaway
// PostgreSQL database. `startWorkflow` returns once the workflow's status row is written
// (durably accepted); the reply is stored when the workflow's result is. A workflow whose
// process dies is recovered when the process (same executor id) launches again; the kill
// column runs the turn in a child process, SIGKILLs it mid-stream and starts it again.

import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import pg from "pg";
import { DBOS } from "@dbos-inc/dbos-sdk";
import { callModel, type ChatMessage } from "../model-call.ts";
import { type Contender, nowMs, runContender, until } from "../runner.ts";
import { backendPids, createDatabase, dropDatabase, fillPool } from "../postgres.ts";

const POOL = 20;

async function launch(url: string, modelUrl: string) {
  const app = new pg.Pool({ connectionString: url, max: POOL, idleTimeoutMillis: 0 });
  const client = new OpenAI({ baseURL: modelUrl, apiKey: "test" });
  const chatTurn = DBOS.registerWorkflow(
    async (agent: string, content: string): Promise<string> => {
      const reply = await DBOS.runStep(
        async () => {
          const history = await app.query<ChatMessage>("SELECT role, content FROM chat WHERE agent = $1 ORDER BY seq", [agent]);
          return callModel(client, [...history.rows, { role: "user", content }]);
        },
        { name: "model" },
      );
      await DBOS.runStep(
        async () => {
          await app.query("INSERT INTO chat (agent, role, content) VALUES ($1, 'user', $2), ($1, 'assistant', $3)", [agent, content, reply]);
        },
        { name: "store" },
      );
      return reply;
    },
    { name: "chatTurn" },
  );
  DBOS.setConfig({ name: "agentrt-peers", systemDatabaseUrl: url, systemDatabasePoolSize: POOL, logLevel: "error" });
  await DBOS.launch();
  return { app, chatTurn };
}

const childArgs = process.argv.indexOf("--child");
if (childArgs >= 0) {
  // The kill column's handler process. With a turn to start it starts it; without, it only
  // launches, and DBOS recovers the workflow the killed incarnation left pending.
  const [url, modelUrl, agent, marker] = process.argv.slice(childArgs + 1);
  const { chatTurn } = await launch(url!, modelUrl!);
  if (agent !== undefined && marker !== undefined) await DBOS.startWorkflow(chatTurn, { workflowID: `${agent}/${marker}` })(agent, marker);
  process.stdout.write("launched\n");
  setInterval(() => undefined, 1 << 30);
} else {
  await runContender(async (config) => {
    const database = `agentrt_peers_dbos_${process.pid}`;
    const url = await createDatabase(database);
    const setup = new pg.Client({ connectionString: url });
    await setup.connect();
    await setup.query("CREATE TABLE chat (seq bigserial PRIMARY KEY, agent text NOT NULL, role text NOT NULL, content text NOT NULL); CREATE INDEX ON chat (agent, seq)");
    await setup.end();
    const { app, chatTurn } = await launch(url, config.modelUrl);
    const contender: Contender = {
      async pids() {
        await fillPool(app, POOL);
        return backendPids(database);
      },
      async createAgent() {},
      async turn(agent, marker) {
        const handle = await DBOS.startWorkflow(chatTurn, { workflowID: `${agent}/${marker}` })(agent, marker);
        const acceptedAt = nowMs();
        await handle.getResult();
        return { acceptedAt, storedAt: nowMs() };
      },
      async killMidReply(agent, marker, modelReceived) {
        const self = fileURLToPath(import.meta.url);
        const first = spawn(process.execPath, ["--import", "tsx", self, "--child", url, config.modelUrl, agent, marker], { stdio: "ignore" });
        const exited = new Promise<void>((resolve) => first.once("exit", () => resolve()));
        await modelReceived;
        await new Promise((r) => setTimeout(r, 100));
        first.kill("SIGKILL");
        await exited;
        const killAt = nowMs();
        const again = spawn(process.execPath, ["--import", "tsx", self, "--child", url, config.modelUrl], { stdio: "ignore" });
        try {
          const workflowID = `${agent}/${marker}`;
          const stored = await until(async () => (await DBOS.getWorkflowStatus(workflowID))?.status === "SUCCESS", 120_000, 10);
          return stored ? { recoveredMs: nowMs() - killAt, note: "process SIGKILLed and started again at once" } : { note: "reply not stored within 120 s" };
        } finally {
          again.kill("SIGKILL");
        }
      },
      async stop() {
        await DBOS.shutdown().catch(() => undefined);
        await app.end().catch(() => undefined);
        await dropDatabase(database).catch(() => undefined);
      },
    };
    return contender;
  });
}
