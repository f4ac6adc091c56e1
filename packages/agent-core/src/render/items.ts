// How one context item becomes one chat message (rendering.md "Messages"): section blocks,
// request stamps, metadata lines with provenance, agent-mail reply lines, attached-file
// hints, and the role demotion that keeps outside input from speaking with developer
// authority. Every function here is a pure function of the item alone, so a rendered item
// can be cached for as long as the item object lives.

import { type Actor, type FileAttachment, mendIllFormedText, type Ref } from "@agentrt/contract";
import type { ContextAddedPayload, ContextItem, MessageItem, RequestItem, SectionItem } from "../state.ts";

export type ChatRole = "system" | "developer" | "user" | "assistant";

export interface ChatMessage {
  readonly role: ChatRole;
  readonly content: string;
}

const q = (value: string): string => JSON.stringify(value);

export function sectionBlock(item: SectionItem, withSupersedes: boolean): string {
  const supersedes = withSupersedes && item.supersedes !== undefined ? ` supersedes="@${item.supersedes}"` : "";
  // Text reaches the model well-formed. Events are refused or mended on the way in now, but a
  // record stored before that rule can hold a lone surrogate, which went to the provider as a
  // `\ud800` escape a provider may refuse on every later turn. Mended as a UTF-8 decoder would
  // (U+FFFD); well-formed text is the very same string, so no prompt's bytes move.
  return mendIllFormedText(`<section key=${q(item.key)}${supersedes}>\n${item.payload.content}\n</section>`);
}

export function renderStamp(item: RequestItem): ChatMessage {
  return { role: "developer", content: `Requested at: ${item.requestedAt}` };
}

/** A section after the standing document keeps its stored role and names what it replaces. */
export function renderTailSection(item: SectionItem): ChatMessage {
  return { role: item.payload.role, content: sectionBlock(item, true) };
}

export function formatActor(actor: Actor): string {
  switch (actor.type) {
    case "user":
      return `user:${actor.origin}`;
    case "agent":
      return `agent:${q(actor.path)}`;
    case "script":
      return `script:${q(actor.executionId)}`;
    case "integration":
      return `integration:${q(actor.name)}`;
    case "slack":
      return `slack:${q(actor.userId ?? actor.botName ?? "unknown")}`;
    case "telegram":
      return `telegram:${q(actor.userId ?? actor.username ?? "unknown")}`;
    case "email":
      return `email:${q(actor.address ?? actor.name ?? "unknown")}`;
    case "github":
      return `github:${q(actor.login ?? actor.senderType ?? "unknown")}`;
  }
}

export function formatRef(ref: Ref): string {
  switch (ref.type) {
    case "event":
      return q(`${ref.streamPath}@${ref.offset}`);
    case "user":
      return q(`user:${ref.userId}`);
    case "file":
      return q(`file:${ref.path}`);
    case "git-commit":
      return q(`${ref.repoPath}@${ref.commitOid}`);
    case "repo-file":
      return q(`${ref.repoPath}/${ref.path}@latest`);
  }
}

/** The single provenance line, or null when the item needs none. */
export function metadataLine(offset: number, payload: ContextAddedPayload): string | null {
  const refs = payload.refs ?? [];
  if (payload.role !== "system" && payload.role !== "developer" && refs.length === 0) return null;
  const parts = [`@${offset}`];
  if (payload.key !== undefined) parts.push(`key=${q(payload.key)}`);
  if (payload.actor !== undefined) parts.push(`actor=${formatActor(payload.actor)}`);
  if (refs.length > 0) parts.push(`refs=[${refs.map(formatRef).join(",")}]`);
  // Provenance must stay on one line whatever the field values contain.
  return parts.join(" ").replace(/[\r\n]+/g, " ");
}

export function fileHint(file: FileAttachment): string {
  return `[Attached file: ${file.filename} (${file.contentType}, ${file.size} bytes) — bytes: await itx.files.get(${q(file.path)}).bytes(); public url: ${file.url}]`;
}

export function mailReplyLine(path: string): string {
  return `To reply to ${path} (which cannot see this conversation): await itx.agents.get(${q(path)}).message(text)`;
}

/** Trust demotion: outside input never speaks with developer authority. */
export function renderedRole(payload: ContextAddedPayload): ChatRole {
  if (payload.role !== "developer") return payload.role;
  if (payload.compaction !== undefined) return "user";
  const actor = payload.actor;
  if (actor === undefined || actor.type === "agent" || actor.type === "script") return "developer";
  return "user";
}

export function renderMessage(item: MessageItem): ChatMessage {
  const { payload } = item;
  const lines: string[] = [];
  const meta = metadataLine(item.offset, payload);
  if (meta !== null) lines.push(meta);
  lines.push(payload.content);
  for (const file of payload.files ?? []) lines.push(fileHint(file));
  if (payload.actor?.type === "agent") lines.push(mailReplyLine(payload.actor.path));
  return { role: renderedRole(payload), content: lines.join("\n") };
}

/** Renders an item that is not part of the standing document. */
export function renderTailItem(item: ContextItem): ChatMessage {
  switch (item.kind) {
    case "request":
      return renderStamp(item);
    case "section":
      return renderTailSection(item);
    case "message":
      // Mended as a section is (sectionBlock); the same message when its text is well-formed.
      return mendIllFormedText(renderMessage(item));
  }
}
