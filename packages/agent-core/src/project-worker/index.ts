// The built-in project worker: the tagged prompt file, create()'s birth batch, and the pure
// reactions (birth configuration and the tag-dialect interpreter).
export { parseTaggedPromptFile, PromptFileParseError, type PromptSection } from "./prompt-file.ts";
export { birthBatch, bootContextContent, BIRTH_WINDOW_DEBOUNCE_MS, type BirthInput } from "./birth.ts";
export { projectWorkerReactions, birthReaction, WORKER_DEBOUNCE_MS, type ProjectWorkerTexts } from "./reactions.ts";
export {
  DEFAULT_AGENTS_MD,
  TAG_DIALECT_OUTPUT_FORMATTING,
  AGENTS_MD_KEY,
  OUTPUT_FORMATTING_KEY,
  BOOT_CONTEXT_KEY,
} from "./texts.ts";
