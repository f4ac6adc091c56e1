// The web UI: hash routes `#/` (agents), `#/agent/<path>` (chat + events),
// `#/agent/<path>/request/<offset>` (what the model saw).
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { AgentsList } from "./agents-list.tsx";
import { AgentPage } from "./agent-page.tsx";
import { apiKey } from "./api.ts";
import { parseHash } from "./route.ts";
import "./styles.css";

function App() {
  const [route, setRoute] = useState(parseHash(location.hash));
  const [key, setKey] = useState(apiKey.get());
  useEffect(() => {
    const onHash = () => setRoute(parseHash(location.hash));
    addEventListener("hashchange", onHash);
    return () => removeEventListener("hashchange", onHash);
  }, []);
  return (
    <div class="shell">
      <header class="top">
        <a href="#/" class="brand">agentrt</a>
        <input
          class="key"
          type="password"
          placeholder="API key (not needed in dev mode)"
          value={key}
          onInput={(e) => {
            const v = (e.target as HTMLInputElement).value;
            setKey(v);
            apiKey.set(v);
          }}
        />
      </header>
      {route.page === "list" ? <AgentsList /> : <AgentPage key={route.path} path={route.path} route={route} />}
    </div>
  );
}

render(<App />, document.getElementById("app")!);
