// The driver's end of the interrupt protocol (service-kit interrupts.ts holds the subject and
// the message shapes): the driver running the request stops its model call and answers with
// the partial text; other drivers stay silent; malformed requests are refused there.

import type { NatsConnection, Subscription } from "@nats-io/nats-core";
import { serveInterrupts, type Logger } from "@agentrt/service-kit";
import { RequestStop, type RunningRequests } from "./running-requests.ts";

export function listenForInterrupts(nc: NatsConnection, running: RunningRequests, logger: Logger): Subscription {
  return serveInterrupts(
    nc,
    ({ streamPath, requestOffset }) => {
      const request = running.get(streamPath, requestOffset);
      if (request === undefined) return undefined;
      const partialText = request.partialText();
      request.stop(new RequestStop("interrupted", "interrupted by the user's next message"));
      logger.info({ streamPath, requestOffset, partialChars: partialText.length }, "interrupted a running model call");
      return { partialText };
    },
    logger,
  );
}
