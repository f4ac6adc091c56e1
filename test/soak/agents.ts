// The soak's agents: each talks continuously, one turn at a time, in one of four ways drawn
// from the seed — a plain message, a message whose answer runs a script first, a slow answer
// interrupted by a second message, and two messages sent back to back (a double text). A turn
// is complete when the assistant's answer to its last message is on the stream.

import type { AgentEvent } from "@agentrt/contract";
import type { AppendResult, EventStore } from "@agentrt/streams";
import { prng } from "@agentrt/testing";
import type { StreamMirror } from "./mirror.ts";
import { answerFor, messageText, scriptAnswerFor } from "./model.ts";

export type TurnKind = "plain" | "script" | "interrupted" | "double-texted";

export interface TurnRecord {
  readonly agent: number;
  readonly kind: TurnKind;
  readonly startedAt: number;
  completedAt?: number;
  /** The turn did not complete within its deadline. */
  stuck?: boolean;
}

export interface SoakAgentOptions {
  readonly store: EventStore;
  readonly mirror: StreamMirror;
  readonly seed: number;
  readonly turnTimeoutMs: number;
  /** Called when a turn could not be completed, with what the stream held. */
  readonly onStuck?: (path: string, id: string, events: readonly AgentEvent[]) => void;
}

export const agentPath = (i: number): string => `/agents/soak/a${i}`;

export class SoakAgent {
  readonly path: string;
  readonly turns: TurnRecord[] = [];
  private readonly random: () => number;
  private messages = 0;
  /** Answers found on the stream but not (yet) by the mirror's feed. */
  mirrorMisses = 0;
  /** What the agent is waiting for now, and since when: a wait that never ends names itself. */
  step = "idle";
  stepSince = Date.now();

  constructor(
    readonly index: number,
    private readonly options: SoakAgentOptions,
  ) {
    this.path = agentPath(index);
    this.random = prng(options.seed * 1000 + index);
  }

  async create(): Promise<void> {
    await this.append([
      { type: "agent/created", payload: {}, idempotencyKey: "soak/created" },
      {
        type: "agent/configured",
        // Model failures are part of the soak: retry them quickly and often enough that an
        // unlucky run of injected 500s and stalls never exhausts the attempts.
        payload: { config: { llmRequestDebounceMs: 100, llmRequestRetryPolicy: { maxAttempts: 20, backoffBaseMs: 200, backoffMaxMs: 2000 } } },
        idempotencyKey: "soak/configured",
      },
    ]);
  }

  /** Runs turns until `keepGoing` says stop; between turns the agent thinks for up to a second. */
  async talk(keepGoing: () => boolean): Promise<void> {
    while (keepGoing()) {
      await this.turn(this.drawKind());
      await new Promise((r) => setTimeout(r, 200 + this.random() * 800));
    }
  }

  private drawKind(): TurnKind {
    const r = this.random();
    return r < 0.4 ? "plain" : r < 0.65 ? "script" : r < 0.8 ? "interrupted" : "double-texted";
  }

  private at(step: string): void {
    this.step = step;
    this.stepSince = Date.now();
  }

  async turn(kind: TurnKind): Promise<TurnRecord> {
    const record: TurnRecord = { agent: this.index, kind, startedAt: Date.now() };
    this.turns.push(record);
    const id = () => `m${this.index}-${this.turns.length}-${(this.messages += 1)}`;
    let last: string;
    let from: number;
    let expected: (id: string) => string = answerFor;
    if (kind === "plain") {
      last = id();
      from = await this.say(messageText(last));
    } else if (kind === "script") {
      last = id();
      from = await this.say(messageText(last, ["script"]));
      expected = scriptAnswerFor;
    } else if (kind === "interrupted") {
      const first = id();
      const sent = await this.say(messageText(first, ["slow"]));
      // Interrupt once the first message's request is open (or give up waiting and interrupt anyway).
      await this.options.mirror
        .waitFor(this.path, sent + 1, (e) => e.type === "agent/llm-request-requested", 15_000)
        .catch(() => undefined);
      last = id();
      from = await this.say(messageText(last), "interrupt-current-request");
    } else {
      await this.say(messageText(id()));
      last = id();
      from = await this.say(messageText(last));
    }
    const wanted = expected(last);
    const isAnswer = (e: AgentEvent) => e.type === "agents/context-added" && e.payload.role === "assistant" && e.payload.content.includes(wanted);
    try {
      this.at(`waiting for the answer to ${last}`);
      await this.options.mirror.waitFor(this.path, from, isAnswer, this.options.turnTimeoutMs);
    } catch {
      this.at(`reading the stream after ${last} took too long`);
      const events = await this.readSurely();
      if (events.some(isAnswer)) this.mirrorMisses += 1;
      else {
        record.stuck = true;
        this.options.onStuck?.(this.path, `${last} (appended: ${JSON.stringify([...this.said].slice(-3))})`, events);
        return record;
      }
    }
    record.completedAt = Date.now();
    this.at("idle");
    return record;
  }

  /** Appends a user message, retrying while the cluster elects a leader; returns its offset. */
  private async say(content: string, behaviour?: "interrupt-current-request"): Promise<number> {
    this.at(`appending ${content}`);
    const result = await this.appendResult(
      [
        {
          type: "agents/context-added",
          payload: { role: "user", content, actor: { type: "user", origin: "web" }, ...(behaviour ? { llmRequestPolicy: { behaviour } } : {}) },
          // The same key on every retry: an append that landed but was not acknowledged is not repeated.
          idempotencyKey: `soak/${content}`,
        },
      ],
    );
    this.said.set(content, { status: result.status, offset: result.events[0]!.offset, key: result.events[0]!.idempotencyKey ?? "" });
    return result.events[0]!.offset;
  }

  /** What each append of a message was answered with (for a stuck turn's report). */
  readonly said = new Map<string, { status: string; offset: number; key: string }>();

  private async append(events: readonly unknown[]): Promise<readonly AgentEvent[]> {
    return (await this.appendResult(events)).events;
  }

  private async appendResult(events: readonly unknown[]): Promise<AppendResult> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await this.options.store.append(this.path, events);
      } catch (error) {
        if (attempt >= 120 || (error as { retryable?: boolean }).retryable !== true) throw error;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  }

  async readSurely(): Promise<AgentEvent[]> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await this.options.store.read(this.path);
      } catch (error) {
        if (attempt >= 40 || (error as { retryable?: boolean }).retryable !== true) throw error;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }
}
