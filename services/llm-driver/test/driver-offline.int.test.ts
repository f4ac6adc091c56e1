// The offline model: with no provider configured, the driver still answers every turn — a
// labelled reply with one codemode script, then, after the script's result, a summary that
// ends the turn — streamed as chunks through the same path as a real provider.

import type { AgentEvent } from "@agentrt/contract";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OFFLINE_LABEL } from "../src/offline-reply.ts";
import { append, type DriverEnv, publishLlmWork, requested, seedTurn, startDriverEnv, waitForEvent } from "./driver-harness.ts";

let env: DriverEnv;
beforeAll(async () => {
  env = await startDriverEnv();
  await env.startDriver({ providers: {} });
});
afterAll(async () => env?.close());

async function runTurn(path: string, R: number): Promise<{ text: string; chunks: AgentEvent[] }> {
  const live = env.store.subscribe(path, { fromOffset: R + 1, ephemeral: true });
  const chunks: AgentEvent[] = [];
  let text = "";
  const done = (async () => {
    for await (const event of live) {
      if (event.type === "agent/llm-response-chunks") chunks.push(event);
      if (event.type === "agent/llm-request-settled" && event.payload.requestOffset === R && event.payload.result.status === "succeeded") {
        text = event.payload.result.text;
        break;
      }
    }
  })();
  await publishLlmWork(env, path, R);
  await done;
  await live.close();
  return { text, chunks };
}

describe("llm-driver: the offline model", () => {
  for (const interpretResponses of [false, true]) {
    it(`answers the whole loop in the ${interpretResponses ? "fenced" : "tag"} dialect`, async () => {
      const path = `/agents/test/offline-${interpretResponses ? "fenced" : "tag"}`;
      const R1 = await seedTurn(env, path, "hi — what can you do?", { interpretResponses });
      const first = await runTurn(path, R1);
      expect(first.text.startsWith(`${OFFLINE_LABEL} `)).toBe(true);
      expect(first.text).toContain("itx.chat.sendMessage(");
      if (interpretResponses) expect(first.text).toMatch(/```ts\nasync \(itx\) => \{\n/);
      else expect(first.text).toMatch(/<codemode status="[^"]+">\n[\s\S]+\n<\/codemode>$/);
      expect(first.chunks.length).toBeGreaterThan(0);
      const streamed = first.chunks
        .flatMap((e) => (e.type === "agent/llm-response-chunks" ? (e.payload.chunks as { choices: { delta: { content?: string } }[] }[]) : []))
        .map((c) => c.choices[0]?.delta.content ?? "")
        .join("");
      expect(streamed).toBe(first.text);
      const usage = await waitForEvent(env.store, path, "agent/token-usage-reported", (e) => e.payload.llmRequestOffset === R1);
      expect(usage.payload.inputTokens).toBeGreaterThan(0);

      // The script's result comes back as developer context (as the reducer renders it).
      await append(env.store, path, [
        {
          type: "agents/context-added",
          payload: {
            role: "developer",
            content: 'Your script returned (in 12ms):\n```json\n{\n  "sentMessage": true\n}\n```',
            actor: { type: "script", executionId: `agent-output:${R1 + 1}` },
            llmRequestPolicy: { behaviour: "after-current-request" },
          },
        },
      ]);
      const [request] = await append(env.store, path, [requested()]);
      const second = await runTurn(path, request!.offset);
      expect(second.text.startsWith(`${OFFLINE_LABEL} The script ran and returned: { "sentMessage": true }`)).toBe(true);
      expect(second.text).not.toContain("itx.chat.sendMessage");
      if (interpretResponses) expect(second.text).not.toContain("```");
      else expect(second.text.endsWith('<codemode status="Idle">return</codemode>')).toBe(true);
      // The fake model was never called: no provider is configured.
      expect(env.model.requests).toHaveLength(0);
    });
  }
});
