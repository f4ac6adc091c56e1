// The exact settlement shapes of codemode.md "Script lifecycle", built in one place so every
// path (typecheck, deadline, runtime, recovery) writes the same bytes the reducer renders.

import { idempotencyKeys, textHead, type PayloadOf } from "@agentrt/contract";

export type Settlement = PayloadOf<"capability-host/script-run-settled">["settlement"];
type Failed = Extract<Settlement, { status: "failed" }>;

// The keys live in the contract's reserved namespaces (one builder each).
export const { scriptRunStarted: startedKey, scriptRunSettled: settledKey } = idempotencyKeys;

/**
 * The most of a failure's text a settlement keeps: the model reads it, and a settlement must fit
 * in an event (1 MiB). A 64 KB script of 31 000 type errors made 4.4 MB of text; the settlement
 * was refused, the item dropped, and the script never settled (red-team).
 */
export const MAX_FAILURE_TEXT_CHARS = 16_000;

/** A failure's text cut to MAX_FAILURE_TEXT_CHARS, saying how much was left out. */
export function keptFailureText(text: string): string {
  if (text.length <= MAX_FAILURE_TEXT_CHARS) return text;
  const note = `\n… (${text.length - MAX_FAILURE_TEXT_CHARS} more characters not shown)`;
  return textHead(text, MAX_FAILURE_TEXT_CHARS - note.length) + note;
}

export function typecheckErrorText(problems: readonly string[]): string {
  const head = "Script was NOT executed: it does not typecheck against this scope's capability types.\n";
  const tail = "Fix the type errors and resend the whole corrected script.";
  // Whole problems, first to last, while they fit; then how many were left out.
  const room = MAX_FAILURE_TEXT_CHARS - head.length - tail.length - 80;
  const shown: string[] = [];
  let used = 0;
  for (const problem of problems) {
    const cost = Math.min(problem.length, 2_000) + 1;
    if (used + cost > room) break;
    shown.push(problem.length > 2_000 ? `${problem.slice(0, 2_000)}…` : problem);
    used += cost;
  }
  const left = problems.length - shown.length;
  const more = left === 0 ? "" : `… and ${left} more problem${left === 1 ? "" : "s"} not shown.\n`;
  return `${head}${shown.join("\n")}\n${more}${tail}`;
}

export function typecheckFailed(problems: readonly string[]): Failed {
  return {
    status: "failed",
    error: typecheckErrorText(problems),
    failureKind: "typecheck",
    phase: "typecheck",
    executionMayHaveOccurred: false,
    cancellation: "not-applicable",
  };
}

/** Not run: the checker was stopped at its budget (a script of pathological types). */
export function typecheckTimedOut(budgetMs: number): Failed {
  return notRunAtTypecheck(`Script was NOT executed: the checker did not finish within ${budgetMs} ms; simplify the types and resend the script.`);
}

/** Not run: the checker's worker died on this script (e.g. its types exhausted the checker's memory). */
export function checkerLostFailed(reason: string): Failed {
  return notRunAtTypecheck(`Script was NOT executed: the checker stopped while checking it (${reason}); simplify the types and resend the script.`);
}

/** Not run: the source is over SCRIPT_MAX_SOURCE_BYTES. */
export function sourceTooLargeFailed(bytes: number, limitBytes: number): Failed {
  return notRunAtTypecheck(
    `Script was NOT executed: its source is ${bytes} bytes, over the limit of ${limitBytes} bytes (SCRIPT_MAX_SOURCE_BYTES); ` +
      "send a shorter script (keep data in files or KV, not in the code).",
  );
}

function notRunAtTypecheck(error: string): Failed {
  return { status: "failed", error, failureKind: "typecheck", phase: "typecheck", executionMayHaveOccurred: false, cancellation: "not-applicable" };
}

/** Stopped by the synchronous-slice limit (it never awaited), not by its deadline. */
export function sliceFailed(limitMs: number): Failed {
  return {
    status: "failed",
    error: `Script ran synchronously for ${limitMs} ms without awaiting (SCRIPT_MAX_SYNC_SLICE_MS) and was stopped.`,
    failureKind: "deadline",
    phase: "execution",
    executionMayHaveOccurred: true,
    cancellation: "external-work-may-continue",
  };
}

export function runtimeFailed(error: string): Failed {
  return {
    status: "failed",
    error: keptFailureText(error),
    failureKind: "runtime",
    phase: "execution",
    executionMayHaveOccurred: true,
    cancellation: "not-applicable",
  };
}

/** The script ran, but the store refused its settlement (`reason`, the store's message): nothing of its result is kept. */
export function settlementRefusedFailed(reason: string): Failed {
  return {
    status: "failed",
    error: keptFailureText(`The script ran, but the event store refused its settlement: ${reason} Its result is not kept; return less, or write large data to itx.files and return its path.`),
    failureKind: "runtime",
    phase: "execution",
    executionMayHaveOccurred: true,
    cancellation: "not-applicable",
  };
}

export function deadlineFailed(phase: "typecheck" | "before-execution" | "execution", limitMs: number): Failed {
  const ran = phase === "execution";
  return {
    status: "failed",
    error: ran
      ? `Script exceeded its execution deadline (${limitMs} ms) and was stopped.`
      : `Script reached its deadline during ${phase} and was NOT executed.`,
    failureKind: "deadline",
    phase,
    executionMayHaveOccurred: ran,
    cancellation: ran ? "external-work-may-continue" : "not-applicable",
  };
}

export function expiredFailed(expiresAt: string): Failed {
  return {
    status: "failed",
    error: `Script was NOT executed: its request expired at ${expiresAt} before it started.`,
    failureKind: "expired",
    phase: "before-execution",
    executionMayHaveOccurred: false,
    cancellation: "not-applicable",
  };
}

export function orphanedFailed(): Failed {
  return {
    status: "failed",
    error:
      "The capability host stopped while this script was running; it was NOT re-run. " +
      "It may have partially executed: inspect state before retrying.",
    failureKind: "orphaned",
    phase: "recovery",
    executionMayHaveOccurred: true,
    cancellation: "external-work-may-continue",
  };
}
