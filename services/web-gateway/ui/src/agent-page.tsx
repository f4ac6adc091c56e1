// One agent: a single live subscription feeds the chat view, the raw event stream and the
// summary header; the request view shows exactly what the model saw for one request. The same
// events are folded with the core's fold, so Stop / Pause / Resume follow the reducer's view.
import { useEffect, useMemo, useState } from "preact/hooks";
import type { ReactionState } from "@agentrt/agent-core";
import { chatControls, foldWireEventInto, formatDuration, initialChatFold, revealBidiControls as shown, type ChatControls } from "@agentrt/agent-core/display";
import { api, type RenderedRequest, type StreamEvent } from "./api.ts";
import { ChatControlsBar, EmptyChat } from "./chat-controls.tsx";
import { subscribeLive, type ConnectionState } from "./live.ts";
import { GrantView } from "./grant-view.tsx";
import { applyLiveEvent, buildTimeline, dropSettledReplies, isEmptyChat, type LiveReplies, type TimelineItem } from "./timeline.ts";

type Route = { page: "agent"; path: string; tab: "chat" | "events" } | { page: "request"; path: string; offset: number };

/** Events arriving within this long are listed (and the page rendered) together. */
const EVENT_BATCH_MS = 16;

export function AgentPage({ path, route }: { path: string; route: Route }) {
  const [events, setEvents] = useState<StreamEvent[]>([]);
  const [live, setLive] = useState<LiveReplies>(new Map());
  const [conn, setConn] = useState<ConnectionState>("connecting");
  const [folded, setFolded] = useState<ReactionState>(() => initialChatFold(path).view);
  useEffect(() => {
    const seen = new Set<number>();
    setEvents([]);
    setLive(new Map());
    const fold = initialChatFold(path);
    setFolded(fold.view);
    // Events are taken in batches, one list copy per batch: appended one by one, each copied the
    // list so far, and a stream's history of tens of thousands of events took the tab that long squared.
    let pending: StreamEvent[] = [];
    let flushTimer: ReturnType<typeof setTimeout> | undefined;
    const flush = () => {
      flushTimer = undefined;
      const batch = pending;
      pending = [];
      setEvents((list) => list.concat(batch));
      setLive((m) => dropSettledReplies(m, batch));
      setFolded(fold.view);
    };
    const handle = subscribeLive(
      path,
      (e) => {
        if (e.ephemeral) {
          setLive((m) => applyLiveEvent(m, e));
          return;
        }
        if (seen.has(e.offset)) return;
        seen.add(e.offset);
        pending.push(e);
        foldWireEventInto(fold, e);
        flushTimer ??= setTimeout(flush, EVENT_BATCH_MS);
      },
      setConn,
    );
    return () => {
      if (flushTimer !== undefined) clearTimeout(flushTimer);
      handle.close();
    };
  }, [path]);
  const enc = encodeURIComponent(path);
  const tab = route.page === "agent" ? route.tab : "request";
  return (
    <main class="page">
      <div class="agent-head">
        <h2>{path}</h2>
        <span class={`conn ${conn}`} data-testid="conn-status">{conn}</span>
        {folded.paused !== null && <span class="badge warn" data-testid="paused-badge">paused</span>}
      </div>
      <GrantView path={path} events={events} />
      <nav class="tabs">
        <a class={tab === "chat" ? "on" : ""} href={`#/agent/${enc}`}>Chat</a>
        <a class={tab === "events" ? "on" : ""} href={`#/agent/${enc}/events`}>Events ({events.length})</a>
        {route.page === "request" && <a class="on">Request @{route.offset}</a>}
      </nav>
      {route.page === "request" ? (
        <RequestView path={path} offset={route.offset} />
      ) : tab === "events" ? (
        <EventsView events={events} />
      ) : (
        <ChatView path={path} events={events} live={live} controls={chatControls(folded)} />
      )}
    </main>
  );
}

function ChatView({ path, events, live, controls }: { path: string; events: StreamEvent[]; live: LiveReplies; controls: ChatControls }) {
  const items = useMemo(() => buildTimeline(events, live), [events, live]);
  const [draft, setDraft] = useState("");
  const [error, setError] = useState<string | null>(null);
  const sendText = async (text: string) => {
    if (text.trim() === "") return;
    try {
      await api.sendMessage(path, text);
      setDraft("");
      setError(null);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const send = (e: Event) => {
    e.preventDefault();
    void sendText(draft);
  };
  return (
    <section class="chat" data-testid="chat">
      <div class="timeline">
        {events.length > 0 && isEmptyChat(items) && <EmptyChat onPick={(prompt) => void sendText(prompt)} />}
        {items.map((item) => <Item key={`${item.kind}-${"offset" in item ? item.offset : item.requestOffset}`} item={item} path={path} />)}
      </div>
      <ChatControlsBar path={path} controls={controls} onError={setError} />
      <form class="composer" onSubmit={send}>
        <textarea
          data-testid="composer"
          value={draft}
          placeholder="Message the agent…"
          onInput={(e) => setDraft((e.target as HTMLTextAreaElement).value)}
          onKeyDown={(e) => e.key === "Enter" && !e.shiftKey && (e.preventDefault(), void send(e))}
        />
        <button type="submit" data-testid="send">Send</button>
      </form>
      {error && <p class="error">{error}</p>}
    </section>
  );
}

function Item({ item, path }: { item: TimelineItem; path: string }) {
  switch (item.kind) {
    case "user":
      return <div class="msg user" data-testid="msg-user" data-offset={item.offset}>{shown(item.content)}</div>;
    case "assistant":
      return <div class="msg assistant" data-testid="msg-assistant" data-offset={item.offset}>{shown(item.content)}</div>;
    case "streaming":
      return (
        <>
          {item.text !== "" && <div class="msg assistant streaming" data-testid="msg-streaming">{shown(item.text)}{item.script === undefined && <span class="caret" />}</div>}
          {item.script !== undefined && (
            <div class="script writing" data-testid="script-streaming">
              <div class="script-head">
                <span>script, being written</span>
                {item.script.status !== undefined && <span class="muted" data-testid="script-streaming-status">{item.script.status}</span>}
              </div>
              <pre class="code">{shown(item.script.code)}<span class="caret" /></pre>
            </div>
          )}
        </>
      );
    case "request":
      return (
        <div class="request-marker" data-testid="request-marker" data-offset={item.offset}>
          <span>request @{item.offset} · {shown(item.model)} · {item.status}</span>
          {item.note !== undefined && <span class="muted" data-testid="request-note">{shown(item.note)}</span>}
          <a href={`#/agent/${encodeURIComponent(path)}/request/${item.offset}`} data-testid="what-the-model-saw">what the model saw</a>
        </div>
      );
    case "script":
      return (
        <div class={`script ${item.status}`} data-testid="script" data-offset={item.offset}>
          <div class="script-head">
            <span>script {item.executionId}</span>
            <span class="badge" data-testid="script-status">{item.status}</span>
            {item.durationMs !== undefined && <span class="muted" data-testid="script-duration">in {formatDuration(item.durationMs)}</span>}
          </div>
          <pre class="code">{shown(item.code)}</pre>
          {item.result !== undefined && <pre class="result" data-testid="script-result">{shown(item.result)}</pre>}
        </div>
      );
    case "error":
      return <div class="stream-error" data-offset={item.offset}>{shown(item.message)}</div>;
    case "paused":
    case "resumed":
      return (
        <div class={`chat-event ${item.kind}`} data-testid={`chat-${item.kind}`} data-offset={item.offset}>
          <span class={`icon ${item.kind === "paused" ? "pause" : "play"}`} aria-hidden="true" /> {item.kind}
          {item.reason !== undefined && <span class="muted"> · {shown(item.reason)}</span>}
        </div>
      );
  }
}

function EventsView({ events }: { events: StreamEvent[] }) {
  return (
    <table class="events" data-testid="events-table">
      <thead><tr><th>@</th><th>type</th><th>createdAt</th><th>payload</th></tr></thead>
      <tbody>
        {events.map((e) => (
          <tr key={e.offset} data-offset={e.offset}>
            <td class="mono">{e.offset}</td>
            <td class="mono">{e.type}</td>
            <td class="mono muted">{e.createdAt}</td>
            <td><details><summary class="mono">{shown(JSON.stringify(e.payload).slice(0, 90))}</summary><pre>{shown(JSON.stringify(e.payload, null, 2))}</pre></details></td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function RequestView({ path, offset }: { path: string; offset: number }) {
  const [req, setReq] = useState<RenderedRequest | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api.renderedRequest(path, offset).then(setReq, (e: Error) => setError(e.message));
  }, [path, offset]);
  if (error) return <p class="error">{error}</p>;
  if (!req) return <p class="muted">Loading…</p>;
  return (
    <section class="request-view" data-testid="request-view">
      <p class="muted">
        {req.model} · requested at {req.requestedAt} · {req.messages.length} messages
      </p>
      {req.messages.map((m, i) => (
        <div class={`rendered ${m.role}`} key={i} data-testid="rendered-message">
          <div class="role">{m.role}</div>
          <pre>{shown(m.content)}</pre>
        </div>
      ))}
    </section>
  );
}
