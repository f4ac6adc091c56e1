// A model's event stream, re-framed before the `openai` client parses it: one chunk per event,
// in one linear pass. The client's SSE decoder copies its whole buffer again for every network
// chunk and for every event it takes out of it, so what costs it nothing to send cost the
// driver's CPU the square of its size: an event of short lines that never ends, or a flood of
// blank lines, comments or bare CRs, held a core for the 45 s until the idle watchdog fired
// (50 s of CPU for 10 MB; red-team), and every other tenant's turn waited behind it. Here,
// comments and empty events are dropped (they carry nothing the client reads), line ends become
// LF, an event is bounded in bytes and in JSON nesting, and each event reaches the client
// alone, so its decoder's copies stay the size of one event. Pure: bytes in, events out.

/** Bytes of one event taken at most: one line of it is bounded the same (MAX_MODEL_LINE_BYTES). */
export const MAX_MODEL_EVENT_BYTES = 4 * 1024 * 1024;

/**
 * Nesting of a `data:` line's JSON taken at most: an answer's chunk nests a few levels; one of
 * thousands of `[` went through the client and threw "Maximum call stack size exceeded" out of
 * the driver's own encoding of it, a message that named nothing.
 */
export const MAX_MODEL_CHUNK_DEPTH = 64;

const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;

export class SseFramingError extends Error {
  readonly code = "ERR_MODEL_RESPONSE_TOO_LARGE";
}

export class SseFramer {
  /** The current line so far (views into the chunks it came in). */
  private line: Uint8Array[] = [];
  private lineBytes = 0;
  /** The current event's kept lines, each ending in LF. */
  private event: Uint8Array[] = [];
  private eventBytes = 0;
  /** The last chunk ended in CR: an LF opening the next one ends nothing (CRLF). */
  private afterCr = false;

  /** Takes a network chunk; returns the events it completed, each whole, ending in a blank line. */
  push(chunk: Uint8Array): Uint8Array[] {
    const out: Uint8Array[] = [];
    let start = 0;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i] as number;
      if (byte !== LF && byte !== CR) continue;
      if (i === start && this.lineBytes === 0) {
        // The LF of a CRLF (split across chunks, or right after its CR), or a blank line with
        // no event to end: a flood of them costs this much each, no more.
        if (byte === LF && this.afterCr) this.afterCr = false;
        else if (this.event.length === 0) this.afterCr = byte === CR;
        else {
          this.endEvent(out);
          this.afterCr = byte === CR;
        }
        start = i + 1;
        continue;
      }
      this.addToLine(chunk.subarray(start, i));
      this.endLine(out);
      this.afterCr = byte === CR;
      start = i + 1;
    }
    if (start < chunk.length) {
      this.afterCr = false;
      this.addToLine(chunk.subarray(start));
    }
    return out;
  }

  /** The stream ended: an event it had not closed with a blank line is handed over as one. */
  end(): Uint8Array[] {
    const out: Uint8Array[] = [];
    if (this.lineBytes > 0) this.endLine(out);
    this.endEvent(out);
    return out;
  }

  private addToLine(part: Uint8Array): void {
    if (part.length === 0) return;
    this.line.push(part);
    this.lineBytes += part.length;
    if (this.lineBytes + this.eventBytes > MAX_MODEL_EVENT_BYTES) {
      throw new SseFramingError(`the model endpoint sent an event of more than ${MAX_MODEL_EVENT_BYTES} bytes`);
    }
  }

  private endLine(out: Uint8Array[]): void {
    const parts = this.line;
    const bytes = this.lineBytes;
    this.line = [];
    this.lineBytes = 0;
    // A blank line ends the event; a comment (a line starting with ":") carries nothing.
    if (bytes === 0) return this.endEvent(out);
    if ((parts[0] as Uint8Array)[0] === COLON) return;
    const line = parts.length === 1 ? (parts[0] as Uint8Array) : Buffer.concat(parts, bytes);
    if (isDataLine(line) && jsonDeeperThan(line, 5, MAX_MODEL_CHUNK_DEPTH)) {
      throw new SseFramingError(`the model endpoint sent a chunk whose JSON nests deeper than ${MAX_MODEL_CHUNK_DEPTH} levels`);
    }
    this.event.push(line, NEWLINE);
    this.eventBytes += bytes + 1;
  }

  private endEvent(out: Uint8Array[]): void {
    if (this.event.length === 0) return;
    this.event.push(NEWLINE);
    out.push(Buffer.concat(this.event, this.eventBytes + 1));
    this.event = [];
    this.eventBytes = 0;
  }
}

const NEWLINE = new Uint8Array([LF]);
const DATA = [0x64, 0x61, 0x74, 0x61, COLON]; // "data:"

function isDataLine(line: Uint8Array): boolean {
  if (line.length < DATA.length) return false;
  for (let i = 0; i < DATA.length; i++) if (line[i] !== DATA[i]) return false;
  return true;
}

/** Whether the JSON from `from` on nests arrays and objects deeper than `max` (strings skipped). */
function jsonDeeperThan(bytes: Uint8Array, from: number, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = from; i < bytes.length; i++) {
    const c = bytes[i] as number;
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}
