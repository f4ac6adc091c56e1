// The gateway's guard for the core's birth rule (agent-core `firstUnbornInput`): user input or a
// script request sent to a path with no agent is refused with 404 "no agent at PATH; create it with …" before
// anything is written, so no stream without a birth is ever created by a send. The batch is
// validated first, so a malformed batch still gets its 400 naming the field.
//
// "Born" means the stream's first event is `agent/created`: `create` commits the birth batch
// only on an empty stream, so that is where every birth is. A path once seen born is
// remembered (a birth is never undone), so the check costs one 1-event read per path.

import { firstUnbornInput, noAgentMessage } from "@agentrt/agent-core";
import { parseEventInput } from "@agentrt/contract";
import type { EventStore } from "@agentrt/streams";
import { GatewayError } from "../errors.ts";

/** Paths remembered as born; beyond this the oldest are forgotten (and re-read on demand). */
export const MAX_REMEMBERED_BIRTHS = 10_000;

export class BirthCheck {
  private readonly born = new Set<string>();

  constructor(private readonly store: EventStore) {}

  /** Throws a 400 for an invalid batch and a 404 for user input or a script request to a path with no agent. */
  async assertInputHasAgent(streamPath: string, events: readonly unknown[]): Promise<void> {
    const batch = events.map((event, index) => parseEventInput(event, index));
    if (firstUnbornInput(batch, false) === null) return; // nothing that a missing birth would hold: no read
    const index = firstUnbornInput(batch, await this.isBorn(streamPath));
    if (index === null) return;
    throw new GatewayError("not_found", noAgentMessage(streamPath), { streamPath, index, rule: "user input and script requests need an agent (agent/created) first" });
  }

  private async isBorn(streamPath: string): Promise<boolean> {
    if (this.born.has(streamPath)) return true;
    const [first] = await this.store.read(streamPath, { fromOffset: 1, limit: 1 });
    if (first?.type !== "agent/created") return false;
    this.born.add(streamPath);
    if (this.born.size > MAX_REMEMBERED_BIRTHS) this.born.delete(this.born.values().next().value!);
    return true;
  }
}
