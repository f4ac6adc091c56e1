// Who is calling and what may they do: turns a presented credential into a Principal, and
// checks verbs on stream paths. Dev mode (explicit, loopback only) yields an all-powerful
// principal; otherwise no key is 401 and a key without the scope is 403.

import { GatewayError } from "../errors.ts";
import { isLoopbackAddress } from "../http/browser-guards.ts";
import { scopeAllows, verifyApiKey, type Scope, type StoredKey, type Verb } from "./keys.ts";
import { RateLimiter, type BucketPolicy } from "./rate-limit.ts";

export interface Principal {
  readonly keyId: string;
  readonly scopes: readonly Scope[];
  readonly rateLimit?: BucketPolicy;
}

export const DEV_PRINCIPAL: Principal = { keyId: "dev-mode", scopes: [{ prefix: "/", verbs: ["admin"] }] };

export interface AuthOptions {
  readonly keys: readonly StoredKey[];
  readonly devMode: boolean;
  readonly defaultRateLimit: BucketPolicy;
  readonly nowMs: () => number;
}

export class Authenticator {
  private keys: Map<string, StoredKey>;
  private readonly limiter: RateLimiter;
  /** The stored key each principal was made from, so a request can be checked again later. */
  private readonly issued = new WeakMap<Principal, StoredKey>();

  constructor(private readonly options: AuthOptions) {
    this.keys = new Map(options.keys.map((k) => [k.id, k]));
    this.limiter = new RateLimiter(options.defaultRateLimit, options.nowMs);
  }

  /**
   * The keys from now on (the keys file changed: a key added, rotated or revoked). Returns the
   * ids of the keys that were revoked or changed, whose open live streams should end.
   */
  replaceKeys(keys: readonly StoredKey[]): string[] {
    // A key that did not change keeps its record, so the principals made from it stay valid.
    const next = new Map(keys.map((k) => {
      const old = this.keys.get(k.id);
      return [k.id, old !== undefined && JSON.stringify(old) === JSON.stringify(k) ? old : k];
    }));
    const changed = [...this.keys].filter(([id, key]) => next.get(id) !== key).map(([id]) => id);
    this.keys = next;
    return changed;
  }

  /**
   * 401 when the key `principal` was made from has been revoked or changed since. A key is
   * checked when a request's headers arrive; its body (HTTP, up to the request timeout) or its
   * message (gRPC) may come seconds later, and a key revoked meanwhile still appended, read, or
   * opened a live stream no revocation would end (red-team).
   */
  assertStillValid(principal: Principal): void {
    const stored = this.issued.get(principal);
    if (stored === undefined) return; // dev mode's, not made from a key
    if (this.keys.get(principal.keyId) !== stored) throw new GatewayError("unauthenticated", "The API key was revoked or changed while the request was arriving.");
  }

  get devMode(): boolean {
    return this.options.devMode;
  }

  /**
   * The credential from `Authorization: Bearer …`, `X-API-Key`, or (for browsers' streams) a
   * query value. Two different keys are a 400 naming where each came from: the first silently
   * won, so a request carried a key its sender did not mean to act with (red-team).
   */
  static credentialFrom(headers: Record<string, string | string[] | undefined>, queryKey?: string): string | undefined {
    const auth = headers.authorization;
    const apiKey = headers["x-api-key"];
    const presented: Array<[where: string, key: string]> = [];
    if (typeof auth === "string" && /^Bearer\s+/i.test(auth)) presented.push(["the Authorization header", auth.replace(/^Bearer\s+/i, "").trim()]);
    if (typeof apiKey === "string" && apiKey.length > 0) presented.push(["the X-API-Key header", apiKey]);
    if (queryKey !== undefined && queryKey.length > 0) presented.push(["the apiKey query parameter", queryKey]);
    const [first, ...others] = presented;
    const other = others.find(([, key]) => key !== first?.[1]);
    if (first !== undefined && other !== undefined) {
      throw new GatewayError("invalid_request", `Two different API keys were sent, in ${first[0]} and in ${other[0]}; send one.`, {
        issues: [{ path: "credentials", message: "one API key per request" }],
      });
    }
    return first?.[1];
  }

  /** 401 unless a valid key is presented (or dev mode is on); 429 when its bucket is empty. */
  authenticate(credential: string | undefined): Principal {
    let principal: Principal;
    if (credential !== undefined && credential.length > 0) {
      const stored = verifyApiKey(this.keys, credential);
      if (stored === null) throw new GatewayError("unauthenticated", "The API key is not valid.");
      principal = { keyId: stored.id, scopes: stored.scopes, ...(stored.rateLimit ? { rateLimit: stored.rateLimit } : {}) };
      this.issued.set(principal, stored);
    } else if (this.options.devMode) {
      principal = DEV_PRINCIPAL;
    } else {
      throw new GatewayError("unauthenticated", "An API key is required: send `Authorization: Bearer <key>`.");
    }
    const waitMs = this.limiter.take(principal.keyId, principal.rateLimit);
    if (waitMs > 0) {
      throw new GatewayError("rate_limited", `Rate limit exceeded for key ${principal.keyId}; retry in ${waitMs} ms.`, { retryAfterMs: waitMs });
    }
    return principal;
  }

  static authorize(principal: Principal, verb: Verb, path: string): void {
    if (!scopeAllows(principal.scopes, verb, path)) {
      throw new GatewayError("forbidden", `Key ${principal.keyId} may not ${verb} ${path}.`, { verb, streamPath: path });
    }
  }

  /** A listing is filtered to what the key may read; a key that can read nothing is refused it (403). */
  static authorizeListing(principal: Principal): void {
    if (!principal.scopes.some((s) => s.verbs.includes("read") || s.verbs.includes("admin"))) {
      throw new GatewayError("forbidden", `Key ${principal.keyId} may not read any stream.`, { verb: "read" });
    }
  }

  /** What a caller may read, as a predicate on paths: listings and tenant usage filter by it (dev mode, no principal: everything). */
  static reads(principal: Principal | null): (path: string) => boolean {
    return (path) => principal === null || Authenticator.can(principal, "read", path);
  }

  static can(principal: Principal, verb: Verb, path: string): boolean {
    return scopeAllows(principal.scopes, verb, path);
  }
}

/** Dev mode runs open, so it refuses any address another machine could reach. */
export function assertDevModeBindable(host: string): void {
  if (!isLoopbackAddress(host)) {
    throw new GatewayError(
      "forbidden",
      `AGENTRT_DEV_MODE=1 runs the gateway without authentication and is only allowed on loopback; HTTP_HOST is ${host}.`,
    );
  }
}
