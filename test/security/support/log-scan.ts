// Finds secrets in captured logs fast enough for megabytes of debug output and thousands of
// keys. Every secret is made of base64url characters only, so any occurrence of one lies
// inside a maximal run of those characters at least as long as itself: collect the distinct
// runs once, then look for each secret inside them instead of scanning the whole log per key.

const RUN = /[A-Za-z0-9_-]{16,}/g;

/** The secrets that occur anywhere in `log`, each with the first line that holds it. */
export function findLeaks(log: string, secrets: readonly string[]): Array<{ secret: string; line: string }> {
  for (const secret of secrets) {
    if (!/^[A-Za-z0-9_-]{16,}$/.test(secret)) throw new Error(`cannot scan for ${JSON.stringify(secret)}: not a 16+ char base64url token`);
  }
  const runs = [...new Set(log.match(RUN) ?? [])];
  const leaks: Array<{ secret: string; line: string }> = [];
  for (const secret of secrets) {
    if (!runs.some((run) => run.length >= secret.length && run.includes(secret))) continue;
    const line = log.split("\n").find((l) => l.includes(secret)) ?? "";
    leaks.push({ secret, line: line.slice(0, 400) });
  }
  return leaks;
}
