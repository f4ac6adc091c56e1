// A synthetic but contract-shaped agent stream for the core benchmark: a birth batch of
// keyed sections, then turns of user input, request, assistant reply, settlement and token
// usage, with script runs and their rendered results, section updates and errors mixed in.
// Events are built already typed (as `parseStoredEvent` would hand them to the fold).

import type { AgentEvent, EventType, PayloadOf } from "@agentrt/contract";

const PATH = "/agents/bench/core";
const T0 = Date.parse("2026-08-24T16:41:00.000Z");

export function syntheticStream(targetEvents: number): { events: AgentEvent[]; requestOffsets: number[] } {
  const events: AgentEvent[] = [];
  const requestOffsets: number[] = [];
  let now = T0;
  const add = <T extends EventType>(type: T, payload: PayloadOf<T>): number => {
    const offset = events.length + 1;
    events.push({ streamPath: PATH, offset, createdAt: new Date(now).toISOString(), type, payload } as AgentEvent);
    return offset;
  };
  const requestModel = (): number => {
    const offset = add("agent/llm-request-requested", { model: "openai/gpt-5.6-terra", expiresAt: new Date(now + 600_000).toISOString(), contractVersion: "7.0.0" });
    requestOffsets.push(offset);
    return offset;
  };
  add("agent/created", {});
  add("agent/configured", { config: { interpretResponses: false, llmRequestDebounceMs: 250 } });
  for (let i = 0; i < 12; i += 1) {
    add("agents/context-added", { role: "system", key: `section-${i}`, content: `Standing instruction ${i}. `.repeat(20) });
  }
  let turn = 0;
  while (events.length < targetEvents) {
    turn += 1;
    now += 5_000;
    add("agents/context-added", {
      role: "user",
      content: `Question ${turn}: ${"please look into this; ".repeat(8)}`,
      actor: { type: "user", origin: "web" },
    });
    now += 250;
    const request = requestModel();
    now += 2_000;
    const reply = `Answer ${turn}. ${"Here is some reasoning. ".repeat(15)}\n<codemode status="Working">\nreturn await itx.repo.listPulls({ state: "open" });\n</codemode>`;
    const assistant = add("agents/context-added", { role: "assistant", content: reply, llmRequestOffset: request });
    add("agent/llm-request-settled", { requestOffset: request, result: { status: "succeeded", text: reply } });
    add("agent/token-usage-reported", {
      llmRequestOffset: request,
      model: "openai/gpt-5.6-terra",
      maxContextTokens: 272_000,
      inputTokens: 1_000 + turn,
      outputTokens: 200,
      cachedInputTokens: 900,
    });
    if (turn % 2 === 0) {
      const executionId = `agent-output:${assistant}`;
      add("capability-host/script-run-requested", {
        code: 'return await itx.repo.listPulls({ state: "open" });',
        executionId,
        expiresAt: new Date(now + 600_000).toISOString(),
      });
      add("capability-host/script-run-started", { executionId });
      now += 1_800;
      add("capability-host/script-run-settled", { executionId, settlement: { status: "succeeded", result: turn } });
      add("agents/context-added", {
        role: "developer",
        content: `Your script returned (in 1.8s):\n\`\`\`json\n${turn}\n\`\`\``,
        actor: { type: "script", executionId },
        llmRequestPolicy: { behaviour: "after-current-request" },
      });
      now += 250;
      const followUp = requestModel();
      now += 1_500;
      add("agents/context-added", { role: "assistant", content: `Done with ${turn}.`, llmRequestOffset: followUp });
      add("agent/llm-request-settled", { requestOffset: followUp, result: { status: "succeeded", text: `Done with ${turn}.` } });
    }
    if (turn % 7 === 0) add("agents/context-added", { role: "system", key: `section-${turn % 12}`, content: `Updated rule ${turn}.` });
    if (turn % 11 === 0) add("stream/error-occurred", { message: `transient error in turn ${turn}` });
  }
  return { events, requestOffsets };
}
