// The baseline: the bare `openai` client calling the same fake model, no runtime and nothing
// durable (the "stored" moment is the end of the stream).

import OpenAI from "openai";
import { callModel } from "../model-call.ts";
import { type Contender, nowMs, runContender } from "../runner.ts";

await runContender(async (config) => {
  const client = new OpenAI({ baseURL: config.modelUrl, apiKey: "test" });
  const contender: Contender = {
    async pids() {
      return [];
    },
    async createAgent() {},
    async turn(_agent, marker) {
      await callModel(client, [{ role: "user", content: marker }]);
      return { storedAt: nowMs() };
    },
    async stop() {},
  };
  return contender;
});
