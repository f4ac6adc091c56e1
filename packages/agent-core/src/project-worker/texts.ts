// The built-in worker's default texts: those of scenario 1 (`seeds/001_*`), so a project
// without its own AGENTS.md or output-formatting text reproduces the fixture byte for byte.

export const DEFAULT_AGENTS_MD =
  "Project AGENTS.md (auto-injected): keep replies terse; the dashboard lives at /projects/demo; deploys go out on merge to main.";

export const TAG_DIALECT_OUTPUT_FORMATTING =
  'Respond with ONE <codemode status="…"> block per reply; markdown outside the tag is your visible chat message; the status attribute is your live activity label…';

/** Keys of the standing-document sections the worker writes. */
export const AGENTS_MD_KEY = "config/agents-md";
export const OUTPUT_FORMATTING_KEY = "output-formatting";
export const BOOT_CONTEXT_KEY = "agent/boot-context";
