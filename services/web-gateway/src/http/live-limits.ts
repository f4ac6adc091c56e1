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
  /** How to end each subscription a holder has open (its key revoked or changed). */
  private readonly enders = new Map<string, Set<() => void>>();

  constructor(readonly maxPerKey: number = DEFAULT_MAX_LIVE_SUBSCRIPTIONS_PER_KEY) {}

  /** Who a subscription counts against: the key, or the client address in dev mode. */
  static holderOf(principal: Principal | null, remoteAddress: string | undefined): string {
    if (principal === null || principal.keyId === DEV_PRINCIPAL.keyId) return `address:${remoteAddress ?? "unknown"}`;
    return `key:${principal.keyId}`;
  }

  /**
   * Takes a slot or throws 429; the returned function gives it back (idempotent). `end` closes
   * the subscription's connection, for `endAll`.
   */
  acquire(holder: string, end?: () => void): () => void {
    const count = this.held.get(holder) ?? 0;
    if (count >= this.maxPerKey) {
      throw new GatewayError(
        "rate_limited",
        `Too many live subscriptions: ${holder.replace(/^key:/, "key ")} already holds ${count}, the limit is ${this.maxPerKey} (MAX_LIVE_SUBSCRIPTIONS_PER_KEY). Close one first.`,
        { limit: this.maxPerKey },
      );
    }
    this.held.set(holder, count + 1);
    if (end !== undefined) {
      const enders = this.enders.get(holder) ?? new Set();
      enders.add(end);
      this.enders.set(holder, enders);
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (end !== undefined) {
        const enders = this.enders.get(holder);
        enders?.delete(end);
        if (enders?.size === 0) this.enders.delete(holder);
      }
      const now = (this.held.get(holder) ?? 1) - 1;
      if (now <= 0) this.held.delete(holder);
      else this.held.set(holder, now);
    };
  }

  /**
   * Ends every live subscription `holder` has open: its key was revoked or changed in the keys
   * file, and a stream authorized by the old key must not outlive it. Returns how many.
   */
  endAll(holder: string): number {
    const enders = [...(this.enders.get(holder) ?? [])];
    for (const end of enders) end();
    return enders.length;
  }

  /** Slots held now (for tests and metrics). */
  heldBy(holder: string): number {
    return this.held.get(holder) ?? 0;
  }
}
