// Coalesces raw provider chunks into `agent/llm-response-chunks` payloads (contract: "The LLM
// request (driver)"). A flush happens when 150 ms have passed since the last flush — the
// window is anchored at the request start, so the first chunk after a slow first token goes
// out at once — or when the buffer reaches 64 000 bytes. Pure: the caller passes the time and
// arms the timer at `nextDueAtMs()`.

export const CHUNK_WINDOW_MS = 150;
export const CHUNK_MAX_BYTES = 64_000;

export interface ChunkFlush {
  readonly chunks: readonly unknown[];
  readonly sequence: number;
  /** Encoded size of the chunks (JSON bytes). */
  readonly bytes: number;
}

export interface ChunkCoalescerOptions {
  /** When the request started (the first window's anchor), epoch ms. */
  readonly startedAtMs: number;
  readonly windowMs?: number;
  readonly maxBytes?: number;
}

export class ChunkCoalescer {
  private readonly windowMs: number;
  private readonly maxBytes: number;
  private lastFlushAtMs: number;
  private buffer: unknown[] = [];
  private bufferBytes = 0;
  private nextSequence = 0;

  constructor(options: ChunkCoalescerOptions) {
    this.windowMs = options.windowMs ?? CHUNK_WINDOW_MS;
    this.maxBytes = options.maxBytes ?? CHUNK_MAX_BYTES;
    this.lastFlushAtMs = options.startedAtMs;
  }

  /** Buffers one chunk; returns what must be published now, in order (possibly nothing). */
  push(chunk: unknown, nowMs: number): ChunkFlush[] {
    const size = Buffer.byteLength(JSON.stringify(chunk) ?? "null");
    const out: ChunkFlush[] = [];
    // Keep each event under the cap: a chunk that would overflow goes into the next event.
    if (this.buffer.length > 0 && this.bufferBytes + size > this.maxBytes) out.push(this.take(nowMs));
    this.buffer.push(chunk);
    this.bufferBytes += size;
    if (this.bufferBytes >= this.maxBytes || nowMs - this.lastFlushAtMs >= this.windowMs) out.push(this.take(nowMs));
    return out;
  }

  /** The timer's tick: flushes the buffer when its window has passed. */
  tick(nowMs: number): ChunkFlush | null {
    if (this.buffer.length === 0 || nowMs - this.lastFlushAtMs < this.windowMs) return null;
    return this.take(nowMs);
  }

  /** When the buffered chunks are due (null when nothing is buffered). */
  nextDueAtMs(): number | null {
    return this.buffer.length === 0 ? null : this.lastFlushAtMs + this.windowMs;
  }

  /** The final flush before settling (null when nothing is buffered). */
  finish(nowMs: number): ChunkFlush | null {
    return this.buffer.length === 0 ? null : this.take(nowMs);
  }

  /** How many events were flushed so far (the next sequence number). */
  get flushedCount(): number {
    return this.nextSequence;
  }

  private take(nowMs: number): ChunkFlush {
    const flush = { chunks: this.buffer, sequence: this.nextSequence, bytes: this.bufferBytes };
    this.nextSequence += 1;
    this.buffer = [];
    this.bufferBytes = 0;
    this.lastFlushAtMs = nowMs;
    return flush;
  }
}
