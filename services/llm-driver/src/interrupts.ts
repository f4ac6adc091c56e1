// Interrupts over core NATS: the reducer asks `agentrt.llm.interrupt` with
// `{streamPath, requestOffset}`; the driver running that request aborts the model call and
// replies `{partialText}`. Drivers not running it stay silent, so the requester hears only
// the owner. The reducer then appends the partial text and the cancelled settlement.

import type { NatsConnection, Subscription } from "@nats-io/nats-core";
import { z } from "zod";
import type { Logger } from "@agentrt/service-kit";
import { RequestStop, type RunningRequests } from "./running-requests.ts";

export const INTERRUPT_SUBJECT = "agentrt.llm.interrupt";

const interruptSchema = z.strictObject({ streamPath: z.string().min(1), requestOffset: z.number().int().positive() });

export function listenForInterrupts(nc: NatsConnection, running: RunningRequests, logger: Logger): Subscription {
  return nc.subscribe(INTERRUPT_SUBJECT, {
    callback: (error, msg) => {
      if (error) {
        logger.warn({ err: error }, "interrupt subscription error");
        return;
      }
      let parsed: z.infer<typeof interruptSchema>;
      try {
        parsed = interruptSchema.parse(msg.json());
      } catch (problem) {
        logger.warn({ err: problem }, "ignoring a malformed interrupt");
        return;
      }
      const request = running.get(parsed.streamPath, parsed.requestOffset);
      if (request === undefined) return;
      const partialText = request.partialText();
      request.stop(new RequestStop("interrupted", "interrupted by the user's next message"));
      logger.info({ ...parsed, partialChars: partialText.length }, "interrupted a running model call");
      msg.respond(JSON.stringify({ partialText }));
    },
  });
}
