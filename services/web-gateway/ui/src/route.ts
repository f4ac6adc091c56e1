// The UI's hash routes: `#/` (agents), `#/agent/<path>` (chat + events),
// `#/agent/<path>/request/<offset>` (what the model saw). Any other hash is the list.

export type RouteState = { page: "list" } | { page: "agent"; path: string; tab: "chat" | "events" } | { page: "request"; path: string; offset: number };

export function parseHash(hash: string): RouteState {
  const m = /^#\/agent\/([^/]+)(?:\/(events|request)(?:\/(\d+))?)?$/.exec(hash);
  if (!m) return { page: "list" };
  let path: string;
  try {
    path = decodeURIComponent(m[1]!);
  } catch {
    // A malformed link (`#/agent/%E0`) had thrown in the first render and left the page blank.
    return { page: "list" };
  }
  if (m[2] === "request" && m[3]) return { page: "request", path, offset: Number(m[3]) };
  return { page: "agent", path, tab: m[2] === "events" ? "events" : "chat" };
}
