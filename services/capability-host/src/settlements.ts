// The exact settlement shapes of codemode.md "Script lifecycle", built in one place so every
// path (typecheck, deadline, runtime, recovery) writes the same bytes the reducer renders.

import { idempotencyKeys, type PayloadOf } from "@agentrt/contract";

export type Settlement = PayloadOf<"capability-host/script-run-settled">["settlement"];
type Failed = Extract<Settlement, { status: "failed" }>;

// The keys live in the contract's reserved namespaces (one builder each).
export const { scriptRunStarted: startedKey, scriptRunSettled: settledKey } = idempotencyKeys;

export function typecheckErrorText(problems: readonly string[]): string {
  return (
    "Script was NOT executed: it does not typecheck against this scope's capability types.\n" +
    `${problems.join("\n")}\n` +
    "Fix the type errors and resend the whole corrected script."
  );
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
    error,
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
