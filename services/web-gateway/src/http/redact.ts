// Keeps API keys out of every log line. Keys travel in headers (Authorization, X-API-Key,
// Cookie) and, for browsers' live streams, in `?apiKey=`; any URL or header set that reaches a
// log goes through here, and the logger itself redacts the header paths as a second net.

export const REDACTED = "[REDACTED]";

/** A key anywhere in a string (a bad key pasted into a path still must not be logged). */
const KEY_PATTERN = /agrt_([A-Za-z0-9]+)_[A-Za-z0-9_-]+/g;

/** The URL with the value of every `apiKey` parameter (any case) and every key-shaped token replaced. */
export function sanitizeUrl(url: string | undefined): string {
  if (url === undefined) return "";
  const question = url.indexOf("?");
  let out = url;
  if (question !== -1) {
    const query = url
      .slice(question + 1)
      .split("&")
      .map((pair) => {
        const eq = pair.indexOf("=");
        const name = eq === -1 ? pair : pair.slice(0, eq);
        return /^(api[-_]?key|access[-_]?token|token|key)$/i.test(safeDecode(name)) ? `${name}=${REDACTED}` : pair;
      })
      .join("&");
    out = `${url.slice(0, question)}?${query}`;
  }
  return out.replace(KEY_PATTERN, `agrt_$1_${REDACTED}`);
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** pino `redact` paths for anything header-shaped a log line may carry. */
export const LOG_REDACT_PATHS = [
  "req.headers.authorization",
  "req.headers.cookie",
  'req.headers["x-api-key"]',
  "headers.authorization",
  "headers.cookie",
  'headers["x-api-key"]',
  "metadata.authorization",
  "apiKey",
  "*.apiKey",
];
