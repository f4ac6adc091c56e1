// The soak's model: the fake OpenAI server answering each agent's message by its id, with a
// script first when the message asks for one, slowly when the message is about to be
// interrupted; and the model faults of the schedule (HTTP 500s, a stream that stalls).

import type { FakeModel, FakeModelRequest, FakeReply } from "@agentrt/testing";

/** `[m<agent>-<turn>-<n>]` names one message; flags after it say how to answer it. */
const MESSAGE_ID = /\[(m\d+-\d+-\d+)\]((?: \w+)*)/;

export function messageText(id: string, flags: readonly ("script" | "slow")[] = []): string {
  return `[${id}]${flags.map((f) => ` ${f}`).join("")} please answer`;
}

export const answerFor = (id: string): string => `answer to [${id}]`;
export const scriptAnswerFor = (id: string): string => `answer to [${id}] after script`;

interface Message {
  readonly role: string;
  readonly content: unknown;
}

export function soakReply(request: FakeModelRequest): FakeReply {
  const messages = (request.body as { messages?: Message[] }).messages ?? [];
  let last = -1;
  for (let i = messages.length - 1; i >= 0; i -= 1) {
    const m = messages[i]!;
    if (m.role === "user" && typeof m.content === "string" && MESSAGE_ID.test(m.content)) {
      last = i;
      break;
    }
  }
  if (last < 0) return { text: "hello" };
  const match = MESSAGE_ID.exec(messages[last]!.content as string)!;
  const id = match[1]!;
  const flags = match[2] ?? "";
  // An assistant reply after the user's message is this turn's script (its result follows): answer for good.
  if (messages.slice(last + 1).some((m) => m.role === "assistant")) return { text: `${scriptAnswerFor(id)}: the count is in`, tokensPerSecond: 200 };
  if (flags.includes("script")) {
    return {
      // The fenced dialect (interpretResponses, the default): one ts fence whose body is an async function.
      text: `checking [${id}]\n\n\`\`\`ts\nasync (itx) => (await itx.repo.listPulls({ state: "open" })).length\n\`\`\``,
      tokensPerSecond: 200,
    };
  }
  if (flags.includes("slow")) {
    // Slow enough that the interrupting message lands while this streams.
    return { text: `${answerFor(id)} ${"and so on ".repeat(30)}`, tokensPerSecond: 15 };
  }
  return { text: `${answerFor(id)} with a few more words to stream`, tokensPerSecond: 100 };
}

/** Queues `count` HTTP 500 answers for the next model requests, whoever sends them. */
export function injectServerErrors(model: FakeModel, count: number): void {
  for (let i = 0; i < count; i += 1) model.script({ failure: { status: 500, message: "soak: injected provider error" } });
}

/** The next model request streams two tokens and then hangs (the driver's idle watchdog must end it). */
export function injectStall(model: FakeModel): void {
  model.script({ text: "this reply stalls after two tokens and never finishes", stallAfterTokens: 2 });
}
