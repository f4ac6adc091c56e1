// `itx.docs.typecheck` for one script. A script may ask about code it never runs, as often as it
// likes, and every check goes to the same few checker workers as every script's own check before
// it runs: two scripts asking about pathological types eight at a time held three other agents'
// scripts in the queue until their deadlines (and had the workers replaced 24 times). So a
// script's checks run one at a time, in the checkers' `docs` lane (served when no script's own
// check waits), its code is held to the scripts' source limit, and after one check that did not
// finish the script may ask no more.

import type { CheckedScript } from "../typecheck/index.ts";
import { ItxInputError } from "./agent-storage.ts";

export interface DocsTypecheckAnswer {
  readonly ok: boolean;
  readonly problems: string[];
}

export class ScriptDocsTypecheck {
  private previous: Promise<void> = Promise.resolve();
  private unfinished: string | undefined;

  constructor(
    /** Checks `code` in the `docs` lane. */
    private readonly check: (code: string) => Promise<CheckedScript>,
    /** SCRIPT_MAX_SOURCE_BYTES. */
    private readonly maxSourceBytes: number,
  ) {}

  async typecheck(code: string): Promise<DocsTypecheckAnswer> {
    const bytes = Buffer.byteLength(code);
    if (bytes > this.maxSourceBytes) {
      throw new ItxInputError(`itx.docs.typecheck: the code is ${bytes} bytes, over the ${this.maxSourceBytes} a script may be (SCRIPT_MAX_SOURCE_BYTES)`);
    }
    const turn = this.previous;
    let done: () => void = () => {};
    this.previous = new Promise<void>((resolve) => (done = resolve));
    try {
      await turn;
      if (this.unfinished !== undefined) {
        throw new ItxInputError(`itx.docs.typecheck: this script's earlier check did not finish (${this.unfinished}); it may ask no more. Simplify the types.`);
      }
      const outcome = await this.check(code);
      if (outcome.kind === "timed-out") this.unfinished = `not within ${outcome.budgetMs} ms`;
      if (outcome.kind === "checker-lost") this.unfinished = outcome.reason;
      return docsTypecheckAnswer(outcome);
    } finally {
      done();
    }
  }
}

/** What `itx.docs.typecheck` answers: only what would block a run is a problem. */
export function docsTypecheckAnswer(outcome: CheckedScript): DocsTypecheckAnswer {
  switch (outcome.kind) {
    case "blocked":
      return { ok: false, problems: [...outcome.problems] };
    case "timed-out":
      return { ok: false, problems: [`the checker did not finish within ${outcome.budgetMs} ms; simplify the types`] };
    case "checker-lost":
      return { ok: false, problems: [`the checker stopped while checking (${outcome.reason}); simplify the types`] };
    case "ok":
    case "unchecked":
      return { ok: true, problems: [] };
    default: {
      const never: never = outcome;
      return never;
    }
  }
}
