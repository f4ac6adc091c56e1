// A cap on concurrent live subscriptions (SSE, WebSocket and gRPC subscribe together) per API
// key: each holds a JetStream consumer or a slot in one, so one key must not be able to open
// thousands. Past the cap a new one is 429; a slot is released when its connection closes. In
// dev mode every caller is the same principal, so callers are counted per client address.

import type { Principal } from "../auth/authenticator.ts";
import { DEV_PRINCIPAL } from "../auth/authenticator.ts";
import { GatewayError } from "../errors.ts";

export const DEFAULT_MAX_LIVE_SUBSCRIPTIONS_PER_KEY = 32;

export class LiveSubscriptionLimiter {
  private readonly held = new Map<string, number>();

  constructor(readonly maxPerKey: number = DEFAULT_MAX_LIVE_SUBSCRIPTIONS_PER_KEY) {}

  /** Who a subscription counts against: the key, or the client address in dev mode. */
  static holderOf(principal: Principal | null, remoteAddress: string | undefined): string {
    if (principal === null || principal.keyId === DEV_PRINCIPAL.keyId) return `address:${remoteAddress ?? "unknown"}`;
    return `key:${principal.keyId}`;
  }

  /** Takes a slot or throws 429; the returned function gives it back (idempotent). */
  acquire(holder: string): () => void {
    const count = this.held.get(holder) ?? 0;
    if (count >= this.maxPerKey) {
      throw new GatewayError(
        "rate_limited",
        `Too many live subscriptions: ${holder.replace(/^key:/, "key ")} already holds ${count}, the limit is ${this.maxPerKey} (MAX_LIVE_SUBSCRIPTIONS_PER_KEY). Close one first.`,
        { limit: this.maxPerKey },
      );
    }
    this.held.set(holder, count + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const now = (this.held.get(holder) ?? 1) - 1;
      if (now <= 0) this.held.delete(holder);
      else this.held.set(holder, now);
    };
  }

  /** Slots held now (for tests and metrics). */
  heldBy(holder: string): number {
    return this.held.get(holder) ?? 0;
  }
}
