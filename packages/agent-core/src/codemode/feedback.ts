// The developer feedback a rejected reply gets. It must say plainly that NOTHING ran (so the
// model does not assume side effects happened) and show the exact shape that would run.

const FENCED_SHAPE = "```ts\nasync (itx) => {\n  // …your steps…\n  return result;\n}\n```";
const TAG_SHAPE = '<codemode status="What you are doing">\n// …your steps…\nreturn result;\n</codemode>';

export function fencedMultipleFeedback(count: number): string {
  return (
    `Your response contained ${count} fenced code blocks, so NOTHING was executed. ` +
    "A reply may hold exactly ONE fenced ```ts block, and it is run as a whole. " +
    "Combine the steps into a single script (or do them over several turns) and resend it as one block:\n" +
    `${FENCED_SHAPE}\n` +
    "Examples meant for the user belong in prose without a fence."
  );
}

export function fencedNotAsyncFeedback(): string {
  return (
    "Your code block did NOT run. The body of the ```ts fence must start with `async`: " +
    "it is an async function that receives `itx`, like this:\n" +
    `${FENCED_SHAPE}\n` +
    "Resend the whole corrected script."
  );
}

/** A lone fence that is not TypeScript (```python, ```json, a bare ```): it was not run either. */
export function fencedNotScriptFeedback(language: string): string {
  const fence = language === "" ? "a fence with no language" : `a \`\`\`${language} fence`;
  return (
    `Your code block did NOT run: only a \`\`\`ts fence whose body starts with \`async\` is run, and this reply held ${fence}. ` +
    "To act, send one script like this:\n" +
    `${FENCED_SHAPE}\n` +
    "Examples meant for the user belong in prose without a fence."
  );
}

export function fencedUnclosedFeedback(): string {
  return (
    "Your code block did NOT run: the ```ts fence was never closed, so the script may be cut off. " +
    "End the script with a line holding only ``` and resend the whole script:\n" +
    FENCED_SHAPE
  );
}

export function tagMultipleFeedback(count: number): string {
  return (
    `Your response contained ${count} <codemode> blocks, so NOTHING was executed. ` +
    "A reply may hold exactly ONE <codemode> block, and it is run as a whole. " +
    "Combine the steps into a single script (or do them over several turns) and resend it as one block:\n" +
    TAG_SHAPE
  );
}

export type TagProblem = "unclosed" | "stray-closer";

export function tagMalformedFeedback(problem: TagProblem): string {
  const why =
    problem === "unclosed"
      ? "the <codemode> opener has no </codemode> closer at the end of a line after it"
      : "it has a </codemode> closer without a <codemode> opener at the start of a line before it";
  return (
    `Your <codemode> block did NOT run: ${why}. ` +
    "Put the opener and the closer each on its own line (or all three parts on one line for a one-liner, " +
    'like <codemode status="Idle">return</codemode>) and resend the whole script:\n' +
    TAG_SHAPE
  );
}
