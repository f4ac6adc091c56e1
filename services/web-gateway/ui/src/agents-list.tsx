// The agents list: every stream with its title, activity, waiting state and open request;
// refreshed every few seconds. Also the "new agent" form.
import { useEffect, useState } from "preact/hooks";
import { revealBidiControls as shown } from "@agentrt/agent-core/display";
import { api, type AgentSummary } from "./api.ts";

export function AgentsList() {
  const [agents, setAgents] = useState<AgentSummary[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [newPath, setNewPath] = useState(`/agents/web/${Math.random().toString(36).slice(2, 8)}`);
  useEffect(() => {
    let alive = true;
    const load = () =>
      api.listAgents().then(
        (r) => alive && (setAgents(r.agents), setError(null)),
        (e: Error) => alive && setError(e.message),
      );
    void load();
    const timer = setInterval(load, 3000);
    return () => {
      alive = false;
      clearInterval(timer);
    };
  }, []);
  const create = async (e: Event) => {
    e.preventDefault();
    try {
      await api.createAgent(newPath);
      location.hash = `#/agent/${encodeURIComponent(newPath)}`;
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <main class="page">
      <form class="create" onSubmit={create} data-testid="create-form">
        <input value={newPath} onInput={(e) => setNewPath((e.target as HTMLInputElement).value)} data-testid="create-path" />
        <button type="submit" data-testid="create-button">New agent</button>
      </form>
      {error && <p class="error">{error}</p>}
      <table class="agents" data-testid="agents-table">
        <thead>
          <tr><th>Agent</th><th>Activity</th><th>Waiting for</th><th>Request</th><th>Offset</th></tr>
        </thead>
        <tbody>
          {(agents ?? []).map((a) => (
            <tr key={a.streamPath} data-path={a.streamPath}>
              <td>
                <a href={`#/agent/${encodeURIComponent(a.streamPath)}`}>{a.title === null ? a.streamPath : shown(a.title)}</a>
                {a.title && <div class="muted">{a.streamPath}</div>}
                {a.paused && <span class="badge warn">paused</span>}
              </td>
              <td>{a.activity === null ? <span class="muted">—</span> : shown(a.activity)}</td>
              <td>{a.waitingFor ? <span class="badge">{a.waitingFor}</span> : <span class="muted">—</span>}</td>
              <td>{a.openRequestOffset ? <span class="badge live">@{a.openRequestOffset} running</span> : <span class="muted">idle</span>}</td>
              <td class="mono">{a.lastOffset}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {agents?.length === 0 && <p class="muted">No agents yet. Create one above.</p>}
    </main>
  );
}
