// Presence on NATS: a process answers on its own subject for as long as its connection lives.
// When the process dies its socket closes and the server drops its subscriptions at once, so a
// request there fails with "no responders"; a live process that is merely slow lets the request
// time out instead. Only the first is proof of death (leases.ts, work-claims.ts).

/** The request found no subscriber: the process that answered there is gone. */
export function isNoResponders(error: unknown): boolean {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    const check = (e as unknown as { isNoResponders?: unknown }).isNoResponders;
    if (e.name === "NoRespondersError" || (typeof check === "function" && check.call(e) === true)) return true;
  }
  return false;
}
