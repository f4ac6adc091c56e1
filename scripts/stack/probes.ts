// Readiness probes the supervisor polls: a TCP port that accepts, an HTTP endpoint that answers 2xx.

import { createConnection } from "node:net";

export function reachable(host: string, port: number, timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

/** An HTTP probe's outcome: ok on 2xx; `answer` says what came back, for a "still waiting" line. */
export interface HttpProbe {
  readonly ok: boolean;
  /** e.g. `503 not ready; unmet: NATS connected`, or `no answer (connect ECONNREFUSED …)`. */
  readonly answer: string;
}

export async function probeHttp(url: string, timeoutMs = 1_000): Promise<HttpProbe> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    if (res.ok) {
      await res.body?.cancel();
      return { ok: true, answer: String(res.status) };
    }
    // A service's /readyz names what it waits for in a short body; anything longer is cut.
    const body = (await res.text()).trim().replace(/\s+/g, " ").slice(0, 300);
    return { ok: false, answer: body === "" ? String(res.status) : `${res.status} ${body}` };
  } catch (error) {
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : error instanceof Error ? error.message : String(error);
    return { ok: false, answer: `no answer (${cause})` };
  }
}
