// create() commits the birth batch atomically, and "what the model saw" returns the exact
// messages rendered from the stream folded through a request's offset.
import { describe, expect, it } from "vitest";
import { PROTOCOL_PROMPT, renderRequestAt } from "@agentrt/agent-core";
import { useDevGateway } from "./support/gateway-harness.ts";
import { userMessage } from "@agentrt/testing";
import { enc, http } from "./support/http.ts";

const fx = useDevGateway();

describe("create", () => {
  it("commits the birth batch: certificate, birth window, one keyed system section per prompt-file block, boot context", async () => {
    const streamPath = "/agents/web/created";
    const promptFile = '<section key="identity">\nYou are a test agent.\n</section>\n\n<section key="rules">\nBe brief.\n</section>\n';
    const res = await http(fx.gw.url, "POST", "/v1/agents", { body: { streamPath, promptFile, project: "Acme Labs" } });
    expect(res.status).toBe(201);
    expect(res.body.events.map((e: { type: string }) => e.type)).toEqual([
      "agent/created",
      "agent/configured",
      "agents/context-added",
      "agents/context-added",
      "agents/context-added",
    ]);
    expect(res.body.events.map((e: { offset: number }) => e.offset)).toEqual([1, 2, 3, 4, 5]);
    expect(res.body.events[1].payload).toEqual({ config: { interpretResponses: true, llmRequestDebounceMs: 60000 } });
    expect(res.body.events.slice(2).map((e: { payload: { key: string } }) => e.payload.key)).toEqual(["identity", "rules", "agent/boot-context"]);
    expect(res.body.events[4].payload.content).toContain('Project "Acme Labs" (slug acme-labs)');
    // A retried create commits nothing and returns the originals.
    const again = await http(fx.gw.url, "POST", "/v1/agents", { body: { streamPath, promptFile, project: "Acme Labs" } });
    expect(again.status).toBe(200);
    expect(again.body.status).toBe("duplicate");
    expect(await fx.ts.store.lastOffset(streamPath)).toBe(5);
    // A different create (another section, another project, a grant) is a conflict naming why, and writes nothing.
    for (const body of [
      { streamPath, promptFile: `${promptFile}<section key="more">\nAlso this.\n</section>\n`, project: "Acme Labs" },
      { streamPath, promptFile, project: "Other" },
      { streamPath, promptFile, project: "Acme Labs", grant: [{ prefix: "/agents/shared", verbs: ["read"] }] },
    ]) {
      const changed = await http(fx.gw.url, "POST", "/v1/agents", { body });
      expect(changed.status, JSON.stringify(body).slice(0, 80)).toBe(409);
      expect(changed.body.error.message).toBe(`An agent already exists at ${streamPath}, born from another prompt file, project or grant; this create wrote nothing.`);
    }
    expect(await fx.ts.store.lastOffset(streamPath)).toBe(5);
    // And the same create retried after the agent moved on is still a duplicate.
    await http(fx.gw.url, "POST", `/v1/streams/${enc(streamPath)}/events`, { body: { events: [userMessage("hello")] } });
    expect((await http(fx.gw.url, "POST", "/v1/agents", { body: { streamPath, promptFile, project: "Acme Labs" } })).body.status).toBe("duplicate");
    // A stream that already holds other events is not an agent to create. (User input cannot
    // start such a stream any more: the gateway refuses it with 404, see send-needs-agent.)
    const other = "/agents/web/not-empty";
    await http(fx.gw.url, "POST", `/v1/streams/${enc(other)}/events`, { body: { events: [{ type: "agent/configured", payload: { config: {} } }] } });
    const clash = await http(fx.gw.url, "POST", "/v1/agents", { body: { streamPath: other } });
    expect(clash.status).toBe(409);
    expect(clash.body.error.code).toBe("conflict");
    expect(await fx.ts.store.lastOffset(other)).toBe(1);
  });

  it("refuses a prompt file whose birth batch is too large for one append with a 413 naming the prompt file, and writes nothing", async () => {
    const streamPath = "/agents/web/too-large";
    const promptFile = Array.from({ length: 500 }, (_, i) => `<section key="${String(i).padEnd(256, "€")}">${"€".repeat(110)}</section>`).join("\n");
    expect(promptFile.length).toBeLessThanOrEqual(200_000);
    const res = await http(fx.gw.url, "POST", "/v1/agents", { body: { streamPath, promptFile } });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe("batch_too_large");
    expect(res.body.error.message).toMatch(/^The agent's birth batch \(its sections, each stored with its key twice, and the boot context\) encodes to \d+ bytes, past the 900000 one append may take; shorten the prompt file/);
    expect(res.body.error.details.issues).toEqual([{ path: "promptFile", message: "its birth batch encodes to at most 900000 bytes" }]);
    expect(await fx.ts.store.lastOffset(streamPath)).toBe(0);
  });

  it("uses the built-in project's prompt file when none is given", async () => {
    const res = await http(fx.gw.url, "POST", "/v1/agents", { body: { streamPath: "/agents/web/default" } });
    expect(res.status).toBe(201);
    const keys = res.body.events.filter((e: { type: string }) => e.type === "agents/context-added").map((e: { payload: { key: string } }) => e.payload.key);
    expect(keys[0]).toBe("identity");
    expect(keys.at(-1)).toBe("agent/boot-context");
  });

  it("rejects a malformed prompt file and a bad path, committing nothing", async () => {
    const bad = await http(fx.gw.url, "POST", "/v1/agents", { body: { streamPath: "/agents/web/bad", promptFile: '<section key="a">\nno closer\n' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/line \d+/);
    expect(await fx.ts.store.lastOffset("/agents/web/bad")).toBe(0);
    const path = await http(fx.gw.url, "POST", "/v1/agents", { body: { streamPath: "agents/web/x" } });
    expect(path.status).toBe(400);
    expect(path.body.error.details.issues[0].path).toBe("body.streamPath");
  });
});

describe("what the model saw", () => {
  it("returns the messages rendered from the stream folded through the request offset", async () => {
    const streamPath = "/agents/web/seen";
    expect((await http(fx.gw.url, "POST", "/v1/agents", { body: { streamPath } })).status).toBe(201);
    const configured = { type: "agent/configured", payload: { config: { interpretResponses: false, llmRequestDebounceMs: 250 } } };
    const turn = await http(fx.gw.url, "POST", `/v1/streams/${enc(streamPath)}/events`, { body: { events: [configured, userMessage("What is 2+2?")] } });
    expect(turn.status).toBe(200);
    // The request is the reducer's to write (the API refuses it), so it goes through the store.
    const requested = await fx.ts.store.append(streamPath, [{ type: "agent/llm-request-requested", payload: { model: "offline/echo", expiresAt: "2099-01-01T00:00:00.000Z" } }]);
    const requestEvent = requested.events[0]!;
    // A later event must not change what the earlier request rendered.
    await http(fx.gw.url, "POST", `/v1/streams/${enc(streamPath)}/events`, { body: { events: [userMessage("later")] } });
    const res = await http(fx.gw.url, "GET", `/v1/agents/${enc(streamPath)}/requests/${requestEvent.offset}`);
    expect(res.status).toBe(200);
    expect(res.body.model).toBe("offline/echo");
    expect(res.body.requestedAt).toBe(requestEvent.createdAt);
    const messages = res.body.messages as Array<{ role: string; content: string }>;
    expect(messages[0]).toEqual({ role: "system", content: PROTOCOL_PROMPT });
    expect(messages[1]!.content.startsWith('<section key="identity">\n')).toBe(true);
    expect(messages.at(-2)).toEqual({ role: "user", content: "What is 2+2?" });
    expect(messages.at(-1)).toEqual({ role: "developer", content: `Requested at: ${requestEvent.createdAt}` });
    // Byte-identical to the core's own renderer over the same stored events.
    const stored = await fx.ts.store.read(streamPath);
    expect(messages).toEqual(renderRequestAt(stored, requestEvent.offset));
  });

  it("404 for an offset that is not an accepted llm-request-requested", async () => {
    const streamPath = "/agents/web/seen";
    const notRequest = await http(fx.gw.url, "GET", `/v1/agents/${enc(streamPath)}/requests/1`);
    expect(notRequest.status).toBe(404);
    expect(notRequest.body.error.message).toContain('"agent/created"');
    const past = await http(fx.gw.url, "GET", `/v1/agents/${enc(streamPath)}/requests/999`);
    expect(past.status).toBe(404);
    const zero = await http(fx.gw.url, "GET", `/v1/agents/${enc(streamPath)}/requests/0`);
    expect(zero.status).toBe(400);
  });
});
