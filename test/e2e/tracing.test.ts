// One turn, one trace: the gateway (the user's message), the reducer (the request), the
// driver (the model call) and the capability host (the script the reply asked for) each export
// their span over OTLP/HTTP to a collector, and all four land in the trace derived from
// (stream path, offset of the user's message).

import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { turnTraceId } from "@agentrt/service-kit";
import { waitFor } from "@agentrt/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type System, startSystem } from "../support/system.ts";

interface CollectedSpan {
  service: string;
  name: string;
  traceId: string;
}
const spans: CollectedSpan[] = [];
let collector: Server;
let system: System;

const toHex = (id: string) => (/^[0-9a-f]+$/i.test(id) ? id.toLowerCase() : Buffer.from(id, "base64").toString("hex"));

beforeAll(async () => {
  collector = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      const json = JSON.parse(body) as {
        resourceSpans: Array<{
          resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
          scopeSpans: Array<{ spans: Array<{ name: string; traceId: string }> }>;
        }>;
      };
      for (const rs of json.resourceSpans) {
        const service = rs.resource.attributes.find((a) => a.key === "service.name")?.value.stringValue ?? "?";
        for (const ss of rs.scopeSpans) for (const span of ss.spans) spans.push({ service, name: span.name, traceId: toHex(span.traceId) });
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => collector.listen(0, "127.0.0.1", resolve));
  const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
  system = await startSystem({
    reducers: 1,
    drivers: 1,
    hosts: 1,
    gateway: true,
    repoProvider: { openPulls: 3 },
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_BSP_SCHEDULE_DELAY: "200" },
    model: {
      replies: [
        { text: 'let me check!\n<codemode status="Counting open PRs">\nreturn (await itx.repo.listPulls({ state: "open" })).length;\n</codemode>' },
        { text: 'There are 3.\n<codemode status="Idle">return</codemode>' },
      ],
    },
  });
});
afterAll(async () => {
  await system?.stop();
  await new Promise<void>((resolve) => collector?.close(() => resolve()));
});

it("follows one turn from the user's message through the reducer, the driver and the host", async () => {
  const path = "/agents/traced/one";
  const enc = encodeURIComponent(path);
  const post = (url: string, body: unknown) =>
    fetch(`${system.gatewayUrl}${url}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }).then(async (r) => {
      if (!r.ok) throw new Error(`${url}: ${r.status} ${await r.text()}`);
      return r.json() as Promise<{ events: Array<{ offset: number }> }>;
    });
  await post("/v1/agents", { streamPath: path });
  const sent = await post(`/v1/streams/${enc}/events`, {
    events: [{ type: "agents/context-added", payload: { role: "user", content: "how many open PRs?", actor: { type: "user", origin: "web" } } }],
  });
  const traceId = turnTraceId(path, sent.events[0]!.offset);
  const inTrace = () => new Set(spans.filter((s) => s.traceId === traceId).map((s) => `${s.service}:${s.name}`));
  await waitFor(() => inTrace().size >= 4, { timeoutMs: 90_000, intervalMs: 200 }).catch((error: unknown) => {
    process.stdout.write(`SPANS ${JSON.stringify(spans)} want ${traceId}\n`);
    throw error;
  });
  expect([...inTrace()].sort()).toEqual(["agent-reducer:reducer.request", "capability-host:script.run", "llm-driver:llm.request", "web-gateway:gateway.user-message"]);
});
