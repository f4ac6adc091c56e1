// The model call every peer makes, the same way agentrt's driver does: the `openai` client,
// Chat Completions, streamed and gathered into one reply.

import OpenAI from "openai";

export interface ChatMessage {
  readonly role: "user" | "assistant";
  readonly content: string;
}

export async function callModel(client: OpenAI, messages: readonly ChatMessage[]): Promise<string> {
  const stream = await client.chat.completions.create({ model: "fake-model", stream: true, messages: messages.map((m) => ({ ...m })) });
  let text = "";
  for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
  return text;
}

/** The marker a reply answers (`re:mk-…`), as the fake model writes it. */
export function repliedMarker(text: string): string | undefined {
  return /^re:(mk-[a-z0-9-]+)/.exec(text)?.[1];
}
