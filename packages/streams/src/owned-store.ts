// A service's own view of the event store: appends of event types the service does not emit
// (the contract's SERVICE_EMITS) are refused BEFORE anything is published. Defence in depth
// behind the gateway's API table and the per-service NATS users: a bug or a hijacked
// dependency in one service cannot write another service's events through its store client.
// Reads, subscriptions and feeds pass through untouched.

import { ContractViolationError, EVENT_URI_PREFIX, foreignKeyRefusal, serviceMayEmit, type EmittingService } from "@agentrt/contract";
import type { AppendOptions, AppendResult, EventStore } from "./event-store.ts";

/** An append of a type the appending service does not own or may not emit. */
export class ForeignEventTypeError extends ContractViolationError {
  constructor(
    readonly service: EmittingService,
    readonly eventType: string,
    where: string,
  ) {
    super("forbidden", `${service} may not append "${eventType}" (${where}): the contract does not let it emit that type.`, [{ path: `${where}.type`, message: `not emitted by ${service}` }], {
      service,
      type: eventType,
    });
    this.name = "ForeignEventTypeError";
  }
}

export interface OwnedStoreOptions {
  readonly service: EmittingService;
  /** Called once per refused append (before it throws), e.g. to count it in a metric. */
  readonly onRefused?: (type: string) => void;
}

function typeOf(input: unknown): string | undefined {
  const type = typeof input === "object" && input !== null ? (input as { type?: unknown }).type : undefined;
  if (typeof type !== "string") return undefined;
  return type.startsWith(EVENT_URI_PREFIX) ? type.slice(EVENT_URI_PREFIX.length) : type;
}

/**
 * Wraps `store` so that `options.service` can only append the types it emits, under idempotency
 * keys of its own namespaces or of none (contract `foreignKeyRefusal`); everything but `append` is
 * the store's own (`withAppend`).
 */
export function ownedStore<S extends EventStore>(store: S, options: OwnedStoreOptions): S {
  const append = (streamPath: string, events: readonly unknown[], appendOptions?: AppendOptions): Promise<AppendResult> => {
    for (const [index, event] of events.entries()) {
      const type = typeOf(event);
      const foreignKey = foreignKeyRefusal(options.service, event, `events[${index}]`);
      if (foreignKey !== undefined) {
        options.onRefused?.(type ?? "unknown");
        return Promise.reject(
          new ContractViolationError("forbidden", `${options.service} may not append this: ${foreignKey}. Nothing was appended.`, [{ path: `events[${index}].idempotencyKey`, message: foreignKey }], {
            service: options.service,
          }),
        );
      }
      // A missing or malformed type is the validator's to reject (a 400-class error, not ownership).
      if (type === undefined || serviceMayEmit(options.service, type)) continue;
      options.onRefused?.(type);
      return Promise.reject(new ForeignEventTypeError(options.service, type, `events[${index}]`));
    }
    return store.append(streamPath, events, appendOptions);
  };
  return withAppend(store, append);
}

/**
 * `store` with `append` in place of its own. Everything else is the store's own member (a proxy,
 * so methods added to the port later pass through, and the concrete store type is kept).
 */
export function withAppend<S extends EventStore>(store: S, append: EventStore["append"]): S {
  return new Proxy(store, {
    get(target, property) {
      if (property === "append") return append;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
