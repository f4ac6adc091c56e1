// What a parsed model reply asks for. Both dialects (fenced and tag) produce the same shape,
// so one interpreter turns either into events.

export type ParsedReply =
  /** One runnable script. `code` is the body as written, trimmed. */
  | { readonly kind: "script"; readonly code: string; readonly status?: string; readonly prose: string }
  /** A block that is empty or only `return`: the turn ends, nothing runs. */
  | { readonly kind: "end-turn"; readonly status?: string; readonly prose: string }
  /** No block at all: the reply is only prose. */
  | { readonly kind: "none"; readonly prose: string }
  /** A block that was NOT run; `feedback` tells the model why and how to fix it. */
  | {
      readonly kind: "rejected";
      readonly reason: "multiple" | "malformed";
      readonly count?: number;
      readonly feedback: string;
      readonly prose: string;
    };

export type ReplyDialect = "fenced" | "tag";

/** Prose around a block: before and after, each trimmed, joined by one blank line. */
export function joinProse(before: string, after: string): string {
  return joinProseParts([before, after]);
}

/**
 * Prose around many blocks: each part trimmed, the empty ones dropped, joined by one blank line
 * (what joining them pairwise gives). In one pass: joined pairwise, the text so far was trimmed
 * again at every part, so a reply of 20 000 blocks cost its length squared (2 s in the reducer
 * per reply, and in the UI per render).
 */
export function joinProseParts(parts: readonly string[]): string {
  return parts
    .map((part) => part.trim())
    .filter((part) => part.length > 0)
    .join("\n\n");
}

/** An activity label fits `agent/summary-updated.activity` (1–240 chars once trimmed). */
export function normaliseStatus(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const decoded = raw
    .replace(/&quot;/g, '"')
    .replace(/&#39;|&apos;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&")
    .replace(/\s+/g, " ")
    .trim();
  if (decoded.length === 0) return undefined;
  return decoded.length <= 240 ? decoded : `${decoded.slice(0, 239)}…`;
}
