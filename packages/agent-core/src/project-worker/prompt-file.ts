// The project's tagged prompt file: `<section key="K">` … `</section>` blocks, one per
// standing-document section, in document order. Anything else outside a block must be blank
// (or an HTML comment), so a typo cannot silently drop instructions.

import { AgentRuntimeError } from "@agentrt/contract";

export interface PromptSection {
  readonly key: string;
  readonly content: string;
}

export class PromptFileParseError extends AgentRuntimeError {
  readonly line: number;

  constructor(line: number, rule: string) {
    super("invalid_payload", `Tagged prompt file, line ${line}: ${rule}.`, { details: { line } });
    this.line = line;
  }
}

/**
 * The longest section key: each section is committed with an idempotency key that carries it
 * (`agent/birth/section/<key>`, at most 512 characters in all). A 600-character key had been
 * refused as `events[2].idempotencyKey`, an event the caller never wrote.
 */
export const MAX_SECTION_KEY_LENGTH = 256;
/** The most sections one file holds: its birth batch carries one event each, with the batch's other events, within MAX_BATCH_EVENTS (1 000). */
export const MAX_PROMPT_SECTIONS = 500;

const OPENER = /^<section\s+key\s*=\s*"([^"]*)"\s*>(.*)$/;
const CLOSER = "</section>";

export function parseTaggedPromptFile(text: string): PromptSection[] {
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  const sections: PromptSection[] = [];
  const seen = new Map<string, number>();
  let open: { key: string; line: number; body: string[] } | null = null;
  let inComment = false;

  lines.forEach((raw, index) => {
    const lineNo = index + 1;
    const line = raw.trim();
    if (open === null) {
      if (inComment || line.startsWith("<!--")) {
        inComment = !line.endsWith("-->");
        return;
      }
      if (line === "") return;
      const opener = OPENER.exec(line);
      if (opener === null) {
        if (line.startsWith("<section")) throw new PromptFileParseError(lineNo, 'a section opener must read <section key="KEY">');
        if (line === CLOSER) throw new PromptFileParseError(lineNo, "</section> closes no open section");
        throw new PromptFileParseError(lineNo, `text outside a <section key="…"> block: "${line.slice(0, 60)}"`);
      }
      const key = opener[1] ?? "";
      if (key.trim() === "") throw new PromptFileParseError(lineNo, "a section key must not be empty");
      if (key.length > MAX_SECTION_KEY_LENGTH) throw new PromptFileParseError(lineNo, `a section key is at most ${MAX_SECTION_KEY_LENGTH} characters, this one has ${key.length}`);
      if (sections.length >= MAX_PROMPT_SECTIONS) throw new PromptFileParseError(lineNo, `a prompt file holds at most ${MAX_PROMPT_SECTIONS} sections`);
      const first = seen.get(key);
      if (first !== undefined) throw new PromptFileParseError(lineNo, `duplicate section key "${key}" (first at line ${first})`);
      seen.set(key, lineNo);
      const rest = opener[2] ?? "";
      if (rest.endsWith(CLOSER)) {
        sections.push({ key, content: rest.slice(0, -CLOSER.length).trim() });
        return;
      }
      open = { key, line: lineNo, body: rest.trim() === "" ? [] : [rest] };
      return;
    }
    if (OPENER.test(line)) {
      throw new PromptFileParseError(lineNo, `a section opens inside section "${open.key}" (opened at line ${open.line}); close it first`);
    }
    if (line.endsWith(CLOSER)) {
      const last = raw.slice(0, raw.lastIndexOf(CLOSER));
      const body = last.trim() === "" ? open.body : [...open.body, last];
      sections.push({ key: open.key, content: body.join("\n").trim() });
      open = null;
      return;
    }
    open.body.push(raw);
  });

  const unclosed = open as { key: string; line: number } | null;
  if (unclosed !== null) {
    throw new PromptFileParseError(unclosed.line, `section "${unclosed.key}" is never closed with </section>`);
  }
  return sections;
}
