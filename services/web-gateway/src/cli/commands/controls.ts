// `pnpm agents stop|pause|resume PATH`: the chat's controls on the command line. They append
// the core's batches (`@agentrt/agent-core/display`), exactly what the web UI's buttons send.

import { pauseBatch, resumeBatch, stopBatch } from "@agentrt/agent-core/display";
import type { EventInput } from "@agentrt/contract";
import { callGateway, clientEnv, encPath } from "../gateway-client.ts";

type Out = (text: string) => void;

function control(name: string, batch: () => EventInput[], done: string) {
  return async (args: readonly string[], out: Out): Promise<number> => {
    const [streamPath, ...rest] = args;
    if (!streamPath || rest.length > 0) throw new Error(`usage: agents ${name} PATH`);
    const res = await callGateway<{ events: { offset: number }[] }>(clientEnv(), "POST", `/v1/streams/${encPath(streamPath)}/events`, { events: batch() });
    out(`${done} ${streamPath} (@${res.events.map((e) => e.offset).join(", @")})\n`);
    return 0;
  };
}

export const stopCommand = control("stop", stopBatch, "stopped (interrupted and paused)");
export const pauseCommand = control("pause", pauseBatch, "paused");
export const resumeCommand = control("resume", resumeBatch, "resumed");
