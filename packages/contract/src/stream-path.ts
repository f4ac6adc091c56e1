// Stream paths name agent streams: `/` followed by one or more segments of [A-Za-z0-9_-].
// The rule is strict so a path maps one-to-one onto NATS subject tokens with no escaping.

import { ContractViolationError } from "./errors.ts";

export const STREAM_PATH_SEGMENT = /^[A-Za-z0-9_-]+$/;
export const MAX_STREAM_PATH_LENGTH = 512;
export const MAX_STREAM_PATH_SEGMENTS = 16;

/** Returns the reason a path is invalid, or null when it is a valid stream path. */
export function streamPathProblem(path: unknown): string | null {
  if (typeof path !== "string") return "a stream path must be a string";
  if (path.length === 0) return "a stream path must not be empty";
  if (path.length > MAX_STREAM_PATH_LENGTH) return `a stream path must be at most ${MAX_STREAM_PATH_LENGTH} characters`;
  if (!path.startsWith("/")) return 'a stream path must start with "/"';
  const segments = path.slice(1).split("/");
  if (segments.length > MAX_STREAM_PATH_SEGMENTS) return `a stream path has at most ${MAX_STREAM_PATH_SEGMENTS} segments`;
  for (const segment of segments) {
    if (segment.length === 0) return "a stream path has no empty segments (no trailing or doubled \"/\")";
    if (!STREAM_PATH_SEGMENT.test(segment)) {
      return `segment "${segment}" may only contain letters, digits, "_" and "-"`;
    }
  }
  return null;
}

/** Validates a stream path, throwing a clear `invalid_stream_path` error when it is not one. */
export function parseStreamPath(path: unknown): string {
  const problem = streamPathProblem(path);
  if (problem !== null) {
    throw new ContractViolationError(
      "invalid_stream_path",
      `Invalid stream path ${JSON.stringify(path)}: ${problem}.`,
      [{ path: "streamPath", message: problem }],
      { streamPath: path },
    );
  }
  return path as string;
}

export function streamPathSegments(path: string): string[] {
  return path.slice(1).split("/");
}
