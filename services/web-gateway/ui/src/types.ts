// The gateway's response shapes as the UI uses them (no DOM here: the chat model's unit tests import it).

export interface StreamEvent {
  streamPath: string;
  offset: number;
  type: string;
  payload: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- rendered per type below
  createdAt: string;
  idempotencyKey?: string;
  ephemeral?: boolean;
}

export interface AgentSummary {
  streamPath: string;
  lastOffset: number;
  title: string | null;
  activity: string | null;
  waitingFor: string | null;
  openRequestOffset: number | null;
  paused: boolean;
}

export interface RenderedRequest {
  streamPath: string;
  requestOffset: number;
  model: string;
  requestedAt: string;
  messages: { role: string; content: string }[];
}
