// The agent's script authority, read-only (docs/security.md "Script authority"): its own
// subtree, the prefixes it was granted on create/configure (the contract's fold of its events).
import { grantOfEvents } from "@agentrt/contract";
import { useMemo } from "preact/hooks";
import type { StreamEvent } from "./types.ts";

export function GrantView({ path, events }: { path: string; events: readonly StreamEvent[] }) {
  const grant = useMemo(() => grantOfEvents(events), [events]);
  return (
    <details class="grant" data-testid="agent-grant">
      <summary class="muted">
        Scripts may touch: <span class="mono">{path}</span> (read, append){grant.length > 0 ? ` + ${grant.length} granted prefix${grant.length === 1 ? "" : "es"}` : ""}
      </summary>
      <ul>
        <li class="mono">{path}/… · read, append (own subtree)</li>
        {grant.map((g) => (
          <li class="mono" key={g.prefix} data-testid="agent-grant-entry">{g.prefix}{g.exact === true ? " (only)" : ""} · {g.verbs.join(", ")}</li>
        ))}
      </ul>
      <p class="muted">Scripts requested through the API are further limited to the requesting key's scope.</p>
    </details>
  );
}
