import { describe, expect, it } from "vitest";
import { parseFencedReply, parseTagReply } from "@agentrt/agent-core";
import { offlineReply, OFFLINE_LABEL } from "../src/offline-reply.ts";

const head = [
  { role: "system", content: "protocol" },
  { role: "system", content: "" },
];
const stamp = { role: "developer", content: "Requested at: 2026-08-24T16:41:04.500Z" };

describe("offline model", () => {
  it("answers a user message in the tag dialect with prose and one codemode script", () => {
    const reply = offlineReply([...head, { role: "user", content: "hi — what can you do?" }, stamp], false);
    expect(reply.startsWith(`${OFFLINE_LABEL} `)).toBe(true);
    expect(reply).toContain('You said: "hi — what can you do?"');
    expect(reply.match(/<codemode status="[^"]+">\n/g)).toHaveLength(1);
    expect(reply.trimEnd().endsWith("</codemode>")).toBe(true);
    expect(reply).toContain("itx.chat.sendMessage(");
    expect(reply).toContain("itx.streams.get(itx.agent.path).getEvent({ offset: 1 })");
  });

  it("answers in the fenced dialect with one ts block whose body starts with async", () => {
    const reply = offlineReply([...head, { role: "user", content: "hello" }, stamp], true);
    const fences = reply.match(/^```/gm) ?? [];
    expect(fences).toHaveLength(2);
    expect(reply).toMatch(/\n```ts\nasync \(itx\) => \{\n[\s\S]+\n\}\n```$/);
    expect(reply).not.toContain("<codemode");
  });

  it("summarises a script result and ends the turn (tag dialect: the Idle one-liner, no script)", () => {
    const result = {
      role: "developer",
      content: '@37 actor=script:"agent-output:33"\nYour script returned (in 1.8s):\n```json\n{\n  "sentMessage": true\n}\n```\nThis result is available…',
    };
    const tag = offlineReply([...head, { role: "user", content: "hi" }, stamp, { role: "assistant", content: "x" }, result, stamp], false);
    expect(tag).toContain('The script ran and returned: { "sentMessage": true }');
    expect(tag.endsWith('\n<codemode status="Idle">return</codemode>')).toBe(true);
    const fenced = offlineReply([...head, result, stamp], true);
    expect(fenced).not.toContain("```");
    expect(fenced.startsWith(OFFLINE_LABEL)).toBe(true);
  });

  it("does not start another script for non-user input (an error transcription)", () => {
    const error = { role: "user", content: '@50 actor=integration:"stream-error"\nError on stream: boom' };
    const reply = offlineReply([...head, error, stamp], false);
    expect(reply).toContain("Noted: Error on stream: boom");
    expect(reply).not.toContain("itx.chat");
  });

  it("is deterministic", () => {
    const messages = [...head, { role: "user", content: "same" }, stamp];
    expect(offlineReply(messages, false)).toBe(offlineReply(messages, false));
  });
});

describe("offline model replies through the real codemode parsers", () => {
  const user = [...head, { role: "user", content: "hi" }, stamp];
  const result = { role: "developer", content: '@9 actor=script:"agent-output:7"\nYour script returned (in 5ms):\n```json\n1\n```' };

  it("tag dialect: one runnable script, then a turn end", () => {
    const first = parseTagReply(offlineReply(user, false));
    expect(first.kind).toBe("script");
    expect(first.kind === "script" && first.code.startsWith("await itx.chat.sendMessage(")).toBe(true);
    expect(first.kind === "script" && first.prose.startsWith(OFFLINE_LABEL)).toBe(true);
    expect(parseTagReply(offlineReply([...user, result, stamp], false)).kind).toBe("end-turn");
  });

  it("fenced dialect: one runnable async script, then prose only", () => {
    const first = parseFencedReply(offlineReply(user, true));
    expect(first.kind).toBe("script");
    expect(first.kind === "script" && first.code.startsWith("async (itx) =>")).toBe(true);
    expect(parseFencedReply(offlineReply([...user, result, stamp], true)).kind).toBe("none");
  });
});
