// The chat's controls and its empty state. Stop, Pause and Resume append the core's batches
// (`@agentrt/agent-core/display`) through the ordinary append API; which ones show follows the
// folded state (Stop only while a request runs, Resume only while paused).
import { useState } from "preact/hooks";
import { pauseBatch, resumeBatch, stopBatch, type ChatControls } from "@agentrt/agent-core/display";
import { api } from "./api.ts";

/** Clickable first messages for an agent nobody has talked to yet. */
export const EXAMPLE_PROMPTS = ["What can you do?", "How many open pull requests do we have?", "Write a script that adds 2 and 3, and tell me the result."];

export function EmptyChat({ onPick }: { onPick: (prompt: string) => void }) {
  return (
    <div class="empty-chat" data-testid="empty-chat">
      <p><strong>This agent is new.</strong> Send it a message below: it answers, and when it needs to act it writes a short TypeScript script, runs it and shows you the result.</p>
      <p class="muted">Try one of these:</p>
      <div class="examples">
        {EXAMPLE_PROMPTS.map((prompt) => (
          <button type="button" class="example" data-testid="example-prompt" key={prompt} onClick={() => onPick(prompt)}>
            {prompt}
          </button>
        ))}
      </div>
    </div>
  );
}

export function ChatControlsBar({ path, controls, onError }: { path: string; controls: ChatControls; onError: (message: string | null) => void }) {
  const [busy, setBusy] = useState(false);
  const run = async (events: readonly unknown[]) => {
    setBusy(true);
    try {
      await api.appendEvents(path, events);
      onError(null);
    } catch (err) {
      onError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="controls" data-testid="chat-controls">
      {controls.requestOpen && (
        <button type="button" class="stop" data-testid="stop" disabled={busy} title="Interrupt the reply in progress and pause the agent" onClick={() => void run(stopBatch())}>
          <span class="icon stop" aria-hidden="true" /> Stop
        </button>
      )}
      {controls.paused ? (
        <button type="button" class="secondary" data-testid="resume" disabled={busy} title="Let the agent continue" onClick={() => void run(resumeBatch())}>
          <span class="icon play" aria-hidden="true" /> Resume
        </button>
      ) : (
        <button type="button" class="secondary" data-testid="pause" disabled={busy} title="Hold the agent's own follow-up turns until you resume or write" onClick={() => void run(pauseBatch())}>
          <span class="icon pause" aria-hidden="true" /> Pause
        </button>
      )}
    </div>
  );
}
