// agentrt as the stack runs it: nats-server, one reducer and one driver as processes started
// from their precompiled bundles (the test/support system), 0 ms debounce. As `agentrt-1p`:
// nats-server and one reducer that runs its llm-driver in its own process
// (REDUCER_LLM_DRIVER=in-process), so requests reach the driver without the work queue. A turn is one appended user message; it is durably
// accepted when the append is acknowledged and its reply is stored when the assistant item
// is committed to the agent's stream (seen on the store's feed).

import type { AgentEvent } from "@agentrt/contract";
import { startSystem } from "../../../test/support/system.ts";
import { repliedMarker } from "../model-call.ts";
import { type Contender, nowMs, runContender } from "../runner.ts";
import { serviceNodeArgs } from "../../support/run.ts";
import { userMessage } from "@agentrt/testing";

const ONE_PROCESS = process.env.PEER_NAME === "agentrt-1p";
const { args: nodeArgs, profiling } = serviceNodeArgs();

await runContender(async (config) => {
  // startSystem also starts its own in-process fake model; the services are pointed at the
  // shared one instead, so that one stays idle.
  const system = await startSystem({
    reducers: 1,
    drivers: ONE_PROCESS ? 0 : 1,
    // As the quickstart and the image run them: a restarted driver starts in what production's does.
    fromBundles: true,
    // BENCH_PROFILE_DIR / BENCH_NODE_ARGS (serviceNodeArgs).
    ...(nodeArgs.length === 0 ? {} : { nodeArgs }),
    env: {
      LOG_LEVEL: "error",
      LLM_CONCURRENCY: "128",
      ...(ONE_PROCESS ? { REDUCER_LLM_DRIVER: "in-process" } : {}),
      OPENAI_BASE_URL: config.modelUrl,
    },
  });
  const stored = new Map<string, (at: number) => void>();
  const feed = system.store.feed({});
  void (async () => {
    for await (const batch of feed) {
      const at = nowMs();
      for (const e of batch.events as AgentEvent[]) {
        if (e.type === "agents/context-added" && e.payload.role === "assistant") {
          const marker = repliedMarker(e.payload.content);
          if (marker !== undefined) stored.get(marker)?.(at);
        }
      }
    }
  })();
  const waitStored = (marker: string) => new Promise<number>((resolve) => stored.set(marker, (at) => { stored.delete(marker); resolve(at); }));
  const path = (agent: string) => `/agents/peers/${agent}`;
  const say = (agent: string, marker: string) =>
    system.store.append(path(agent), [userMessage(marker)]);
  // What is killed mid-reply: the process running the driver.
  const driver = system.processes.byService(ONE_PROCESS ? "agent-reducer" : "llm-driver")[0]!;
  const contender: Contender = {
    async pids() {
      return [system.nats?.pid, ...system.processes.all.map((p) => p.pid)].filter((p): p is number => p !== undefined);
    },
    async createAgent(agent) {
      await system.store.append(path(agent), [
        { type: "agent/created", payload: {} },
        { type: "agent/configured", payload: { config: { llmRequestDebounceMs: 0 } } },
      ]);
    },
    async turn(agent, marker) {
      const reply = waitStored(marker);
      await say(agent, marker);
      const acceptedAt = nowMs();
      return { acceptedAt, storedAt: await reply };
    },
    async killMidReply(agent, marker, modelReceived) {
      const reply = waitStored(marker);
      await say(agent, marker);
      await modelReceived;
      await new Promise((r) => setTimeout(r, 100)); // well inside the 2.2 s slow stream
      await driver.signal("SIGKILL");
      const killAt = nowMs();
      driver.start();
      const storedAt = await Promise.race([reply, new Promise<undefined>((r) => setTimeout(() => r(undefined), 120_000))]);
      return storedAt === undefined
        ? { note: "reply not stored within 120 s" }
        : { recoveredMs: storedAt - killAt, note: `${ONE_PROCESS ? "reducer with its driver" : "driver"} SIGKILLed and restarted at once` };
    },
    async stop() {
      await feed.close();
      // A profile is written when the process exits on its own: SIGTERM first, not the harness's SIGKILL.
      if (profiling) for (const p of system.processes.all) await p.signal("SIGTERM");
      await system.stop();
    },
  };
  return contender;
});
