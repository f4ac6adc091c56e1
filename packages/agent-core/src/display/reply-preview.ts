// What a person sees of a model reply in a chat bubble or a one-line preview. The script a
// reply asked for is shown on its own (as a script card fed by the host's events), so a reply
// whose block RAN shows only its prose; a reply whose block did NOT run (several blocks, an
// unclosed or non-async one) shows in full, because that text is all there is to see. Uses the
// same parsers the interpreters use, so the bubble never disagrees with what was executed.

import { parseFencedReply } from "../codemode/fenced.ts";
import { parseTagReply } from "../codemode/tag.ts";

/** The text of a reply as the chat shows it (see the header for which part that is). */
export function replyProse(content: string): string {
  const parsed = /^[ \t]*<codemode\b/m.test(content) ? parseTagReply(content) : parseFencedReply(content);
  switch (parsed.kind) {
    case "script":
    case "end-turn":
      return parsed.prose;
    case "none":
    case "rejected":
      return content.trim();
  }
}

/** One line of at most `max` characters: whitespace collapsed, an ellipsis when cut. */
export function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  if (flat.length <= max) return flat;
  return `${flat.slice(0, Math.max(1, max - 1)).trimEnd()}…`;
}
