// The offline model's answer (no provider configured): a deterministic reply in the agent's
// reply dialect, so a new user sees the whole loop — prose plus one codemode script, the
// script's result, then a summary that ends the turn — without an API key. Pure: a function
// of the rendered messages and the dialect. Every reply is labelled "[offline model]".

export const OFFLINE_LABEL = "[offline model]";

export interface OfflineMessage {
  readonly role: string;
  readonly content: string;
}

const REQUESTED_AT = /^Requested at: /;
const METADATA_LINE = /^@\d+(?: [^\n]*)?\n/;

/** The newest message that is not a request stamp. */
function lastTurn(messages: readonly OfflineMessage[]): OfflineMessage | undefined {
  for (let i = messages.length - 1; i >= 2; i -= 1) {
    const m = messages[i] as OfflineMessage;
    if (!(m.role === "developer" && REQUESTED_AT.test(m.content))) return m;
  }
  return undefined;
}

function quote(text: string, max = 160): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

function demoScriptBody(): string {
  return [
    `await itx.chat.sendMessage("${OFFLINE_LABEL} Hello from a codemode script: this chat message was sent by itx.chat.sendMessage.");`,
    "const birth = await itx.streams.get(itx.agent.path).getEvent({ offset: 1 });",
    "return { sentMessage: true, streamPath: itx.agent.path, firstEventType: birth?.type ?? null };",
  ].join("\n");
}

function withScript(prose: string, interpretResponses: boolean): string {
  const body = demoScriptBody();
  if (interpretResponses) {
    const indented = body
      .split("\n")
      .map((line) => `  ${line}`)
      .join("\n");
    return `${prose}\n\n\`\`\`ts\nasync (itx) => {\n${indented}\n}\n\`\`\``;
  }
  return `${prose}\n<codemode status="Running the offline demo script">\n${body}\n</codemode>`;
}

function endTurn(prose: string, interpretResponses: boolean): string {
  return interpretResponses ? prose : `${prose}\n<codemode status="Idle">return</codemode>`;
}

/** What the script said, from a rendered script result (`Your script returned …` / `failed …`). */
function scriptOutcome(content: string): { ok: boolean; detail: string } {
  const body = content.replace(METADATA_LINE, "");
  const fenced = /```[a-z]*\n([\s\S]*?)\n```/.exec(body);
  const detail = quote(fenced?.[1] ?? body, 400);
  return { ok: body.startsWith("Your script returned"), detail };
}

export function offlineReply(messages: readonly OfflineMessage[], interpretResponses: boolean): string {
  const turn = lastTurn(messages);
  if (turn === undefined) {
    return endTurn(`${OFFLINE_LABEL} No model provider is configured, and there is nothing to answer yet.`, interpretResponses);
  }
  const isScriptResult = turn.role === "developer" && /^@\d+ [^\n]*actor=script:/.test(turn.content);
  if (isScriptResult) {
    const outcome = scriptOutcome(turn.content);
    const prose = outcome.ok
      ? `${OFFLINE_LABEL} The script ran and returned: ${outcome.detail}. That was the whole loop (reply, script, result, next turn). Configure a model provider (OPENAI_API_KEY or LLM_PROVIDERS) for real answers.`
      : `${OFFLINE_LABEL} The script did not succeed: ${outcome.detail}. Configure a model provider (OPENAI_API_KEY or LLM_PROVIDERS) for real answers.`;
    return endTurn(prose, interpretResponses);
  }
  const fromUser = turn.role === "user" && (!METADATA_LINE.test(turn.content) || /^@\d+ [^\n]*actor=user:/.test(turn.content));
  if (fromUser) {
    const said = quote(turn.content.replace(METADATA_LINE, ""));
    const prose = `${OFFLINE_LABEL} No model provider is configured, so a deterministic stand-in is answering. You said: "${said}". Here is a codemode script that sends you a chat message and reads this agent's own stream.`;
    return withScript(prose, interpretResponses);
  }
  return endTurn(`${OFFLINE_LABEL} Noted: ${quote(turn.content.replace(METADATA_LINE, ""))}`, interpretResponses);
}

/** The offline model's compaction summary: the turns it saw, briefly. */
export function offlineSummary(messages: readonly OfflineMessage[]): string {
  const turns = messages.slice(2).filter((m) => !REQUESTED_AT.test(m.content));
  return `${OFFLINE_LABEL} ${turns.length} earlier messages; the last was: ${quote(turns.at(-1)?.content ?? "(none)")}`;
}
