// setTimeout takes at most 2^31 − 1 ms (24.8 days); a longer delay fires after 1 ms, with only
// a TimeoutOverflowWarning. Delays computed from data (an agent's debounce, a request's or a
// script's expiry) go through here: a reducer armed a 35-day debounce as a 1 ms timer, decided
// the agent again, armed it again, and spun one core for as long as the agent waited.

/** The longest delay setTimeout honours. */
export const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

/** `ms` as a delay setTimeout honours: at least 0, at most MAX_TIMER_DELAY_MS (a timer that far off fires early, and its owner re-arms it). */
export function timerDelayMs(ms: number): number {
  return Math.min(MAX_TIMER_DELAY_MS, Math.max(0, ms));
}
