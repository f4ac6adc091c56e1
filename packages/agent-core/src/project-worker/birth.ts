// `create()`'s atomic birth batch: the certificate, the 60 s birth window (parsing on, a long
// debounce that holds the first turn until a worker has configured the agent), one keyed
// system section per prompt-file block (file order = offset order = document order), and the
// agent's boot facts. Every event is keyed so a retried create() commits nothing twice.

import { idempotencyKeys, type EventInput } from "@agentrt/contract";
import { parseTaggedPromptFile } from "./prompt-file.ts";
import { BOOT_CONTEXT_KEY } from "./texts.ts";

export interface BirthInput {
  readonly promptFileText: string;
  readonly project: { readonly name: string; readonly slug: string };
  readonly streamPath: string;
  readonly workspace: string;
  readonly configRepo: string;
}

export const BIRTH_WINDOW_DEBOUNCE_MS = 60_000;

/**
 * The boot facts, in the words of scenario 1 (its `…` continues the seed's elided text and
 * is kept so the demo project's standing document matches the fixture byte for byte).
 */
export function bootContextContent(input: Omit<BirthInput, "promptFileText">): string {
  return (
    `Context for this agent: Project ${JSON.stringify(input.project.name)} (slug ${input.project.slug}); ` +
    `your stream path ${input.streamPath}; workspace ${input.workspace}; config repo at ${input.configRepo}…`
  );
}

export function birthBatch(input: BirthInput): EventInput[] {
  const sections = parseTaggedPromptFile(input.promptFileText);
  return [
    // The certificate names the project, which is how the project's worker knows the agent is its own.
    { type: "agent/created", payload: { project: { name: input.project.name, slug: input.project.slug } }, idempotencyKey: idempotencyKeys.birth("created") },
    {
      type: "agent/configured",
      payload: { config: { interpretResponses: true, llmRequestDebounceMs: BIRTH_WINDOW_DEBOUNCE_MS } },
      idempotencyKey: idempotencyKeys.birth("configured"),
    },
    ...sections.map(
      (section): EventInput => ({
        type: "agents/context-added",
        payload: { role: "system", key: section.key, content: section.content },
        idempotencyKey: idempotencyKeys.birth(`section/${section.key}`),
      }),
    ),
    {
      type: "agents/context-added",
      payload: { role: "system", key: BOOT_CONTEXT_KEY, content: bootContextContent(input) },
      idempotencyKey: idempotencyKeys.birth("boot-context"),
    },
  ];
}
