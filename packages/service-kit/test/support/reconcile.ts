// What the work queue's reconciler tests share: the warnings a consumer logs, captured as they
// are written, and a JetStream manager whose stream info shows a chosen state (the views of a
// work stream the long soak met, which a healthy server cannot be made to report).

import type { JetStreamManager, StreamInfo } from "@nats-io/jetstream";
import { pino } from "pino";

/** Warnings a consumer logs, parsed, as they are written. */
export function capturedWarnings() {
  const lines: Record<string, unknown>[] = [];
  const capture = pino({ level: "warn" }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { lines, capture };
}

/** `jsm` with `streams.info` answered through `view` (undefined: the real answer). */
export function withStreamView(jsm: JetStreamManager, view: (info: StreamInfo) => StreamInfo | undefined): JetStreamManager {
  const streams = new Proxy(jsm.streams, {
    get(target, property, receiver) {
      if (property !== "info") return Reflect.get(target, property, receiver) as unknown;
      return async (name: string) => {
        const info = await target.info(name);
        return view(info) ?? info;
      };
    },
  });
  return new Proxy(jsm, { get: (target, property, receiver) => (property === "streams" ? streams : (Reflect.get(target, property, receiver) as unknown)) });
}
