// Bytes from NATS are parsed, never trusted: text that is not JSON becomes `undefined`, which the
// caller's schema then refuses like any other malformed value.

export function parseJsonOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
