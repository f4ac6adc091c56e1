// How long a script took, as the model reads it in a rendered settlement (codemode.md
// "Rendering a settlement back") and as the web UI and the CLI show it: ONE function, so a
// person never sees a different duration than the model (1 999 ms is "1.9s" everywhere).
//
// The rule that satisfies every documented value:
//   - under 1000 ms: whole milliseconds (`0ms`, `999ms`);
//   - under 120 s: seconds TRUNCATED to one decimal, trailing `.0` dropped (1234 → `1.2s`,
//     1800 → `1.8s`, 119 949 → `119.9s`). Truncation (not rounding) keeps every value below
//     120 000 ms under `120s`, so the switch to minutes happens exactly at 120 s;
//   - from 120 s: ROUNDED to whole seconds, written as minutes and seconds with a zero
//     seconds part dropped (125 000 → `2m 5s`, 179 700 → 180 s → `3m`).

const MINUTES_FROM_MS = 120_000;

export function formatDuration(ms: number): string {
  const whole = Number.isFinite(ms) ? Math.max(0, Math.round(ms)) : 0;
  if (whole < 1000) return `${whole}ms`;
  if (whole < MINUTES_FROM_MS) {
    const tenths = Math.floor(whole / 100);
    const seconds = Math.floor(tenths / 10);
    const fraction = tenths % 10;
    return fraction === 0 ? `${seconds}s` : `${seconds}.${fraction}s`;
  }
  const totalSeconds = Math.round(whole / 1000);
  const minutes = Math.floor(totalSeconds / 60);
  const seconds = totalSeconds % 60;
  return seconds === 0 ? `${minutes}m` : `${minutes}m ${seconds}s`;
}

/** Milliseconds between two ISO timestamps, never negative (clock skew reads as 0). */
export function elapsedMs(fromIso: string, toIso: string): number {
  const from = Date.parse(fromIso);
  const to = Date.parse(toIso);
  if (Number.isNaN(from) || Number.isNaN(to)) return 0;
  return Math.max(0, to - from);
}
