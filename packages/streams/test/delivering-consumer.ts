// A stand-in for the JetStream client a StreamSubscription pulls with: its one consumer delivers
// the given records, then waits as a live consumer does when nothing more arrives.

import type { StoredRecord } from "../src/jetstream/records.ts";

export function jetStreamDelivering(records: readonly StoredRecord[]) {
  return {
    consumers: {
      get: async () => ({
        consume: async () => ({
          stop: () => undefined,
          async *status() {},
          async *[Symbol.asyncIterator]() {
            for (const r of records) yield { seq: r.seq, subject: r.subject, data: r.data, info: { pending: 0 } };
            await new Promise(() => undefined); // live: nothing more arrives
          },
        }),
        delete: async () => true,
      }),
    },
  };
}
