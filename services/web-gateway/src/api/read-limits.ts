// The gateway's bounds on what one request may make it read or accept (issue 11, "bounded
// reads"): how big one appended event may be, how many bytes of events one read page returns,
// and how many bytes of folding one listing page may cost. Defaults are the documented ones;
// main.ts sets them from config (MAX_EVENT_BYTES, MAX_READ_PAGE_BYTES, MAX_LIST_FOLD_BYTES,
// READS_PER_KEY, READS_TOTAL).

import { DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_READ_BYTES } from "@agentrt/streams";

export interface ReadLimits {
  /** Largest event JSON an append may carry (413 `event_too_large` past it). */
  readonly maxEventBytes: number;
  /** Bytes of events one read page returns at most; the page ends early and `nextOffset` continues. */
  readonly maxPageBytes: number;
  /** Bytes of events one listing page may fold before it ends early with a `next` cursor. */
  readonly maxListFoldBytes: number;
  /** Expensive reads (pages, folds, listings) one API key runs at once; more wait their turn. */
  readonly maxConcurrentReadsPerKey: number;
  /** Expensive reads the gateway runs at once, all keys together. */
  readonly maxConcurrentReads: number;
  /**
   * Bytes of events folded into the states the gateway keeps between requests, all together: the
   * least recently used beyond it are dropped, and a state folded from more than this is not kept.
   */
  readonly maxCachedStateBytes: number;
}

export const DEFAULT_READ_LIMITS: ReadLimits = {
  maxEventBytes: DEFAULT_MAX_EVENT_BYTES,
  maxPageBytes: DEFAULT_MAX_READ_BYTES,
  maxListFoldBytes: 4 * DEFAULT_MAX_READ_BYTES,
  maxConcurrentReadsPerKey: 2,
  maxConcurrentReads: 8,
  maxCachedStateBytes: 256 * 1024 * 1024,
};

/** The most agents one listing page returns. */
export const MAX_LIST = 500;
