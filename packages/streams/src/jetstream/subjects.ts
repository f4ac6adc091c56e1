// How stream paths map onto NATS subjects: `<prefix>.<partition>.<path segments>`. Path
// segments are [A-Za-z0-9_-] (parseStreamPath), which are valid subject tokens as they are,
// so the mapping is one-to-one and needs no escaping.

import { streamPathSegments } from "@agentrt/contract";

export interface SubjectScheme {
  /** Durable subjects captured by the JetStream stream (default `ev`). */
  readonly durablePrefix: string;
  /** Core-NATS live-lane subjects, never captured (default `eph`). */
  readonly ephemeralPrefix: string;
}

export function durableSubject(scheme: SubjectScheme, partition: number, streamPath: string): string {
  return `${scheme.durablePrefix}.${partition}.${streamPathSegments(streamPath).join(".")}`;
}

/**
 * Header of a live-lane message: the distinct event types it carries, comma-separated. A
 * subscriber that wants only some types (the reducer wants the driver's chunks, not the
 * runtime changes and previews it published itself) drops the others unparsed; a message
 * without it is parsed and filtered item by item.
 */
export const LIVE_TYPES_HEADER = "Agentrt-Live-Types";

/**
 * On a stream's first record: the key index's epoch, when the store that wrote it had reserved
 * its keys before publishing it, so every key of the stream is in that index (key-index.ts).
 */
export const KEYS_INDEXED_HEADER = "Agentrt-Keys-Indexed";

export function ephemeralSubject(scheme: SubjectScheme, partition: number, streamPath: string): string {
  return `${scheme.ephemeralPrefix}.${partition}.${streamPathSegments(streamPath).join(".")}`;
}

/** The stream path of a durable subject, or undefined when the subject is not one of ours. */
export function pathOfSubject(scheme: SubjectScheme, subject: string): string | undefined {
  const tokens = subject.split(".");
  if (tokens.length < 3 || tokens[0] !== scheme.durablePrefix) return undefined;
  return `/${tokens.slice(2).join("/")}`;
}

export function partitionOfSubject(subject: string): number {
  return Number(subject.split(".")[1]);
}

/**
 * The narrowest subject filter covering every stream under a path prefix. Only whole segments
 * can be filtered by the server; a partial last segment is matched client-side.
 */
export function prefixFilter(scheme: SubjectScheme, prefix: string | undefined): string {
  if (prefix === undefined || prefix === "" || prefix === "/") return `${scheme.durablePrefix}.>`;
  const body = prefix.startsWith("/") ? prefix.slice(1) : prefix;
  const segments = body.split("/");
  // The last piece is either empty (prefix ends in "/") or possibly a partial segment.
  const complete = segments.slice(0, -1);
  const safe = complete.filter((s) => /^[A-Za-z0-9_-]+$/.test(s));
  if (safe.length !== complete.length || safe.length === 0) return `${scheme.durablePrefix}.>`;
  return `${scheme.durablePrefix}.*.${safe.join(".")}.>`;
}
