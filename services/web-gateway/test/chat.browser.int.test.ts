// The web UI in headless Chromium against a real gateway on the JetStream store. The test
// plays reducer, driver and host by appending exactly the events a codemode turn produces
// (and publishing the reply's chunks on the live lane), so every UI claim is checked against
// known offsets: streamed text before the settlement, the script with status, result and
// duration, "what the model saw", and recovery from a dropped connection with no duplicate.
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "@agentrt/testing";
import type { TestStore } from "./support/store.ts";
import type { TestGateway } from "./support/gateway-harness.ts";
import { screenshotPath, startUiStack, type UiStack } from "./support/browser.ts";

const PATH = "/agents/web/browser-demo";
const SCREENSHOT = screenshotPath("screenshot-chat.png");
let ts: TestStore;
let gw: TestGateway;
let ui: UiStack;
let page: Page;

beforeAll(async () => {
  ui = await startUiStack({ width: 1100, height: 900 });
  ({ ts, gw, page } = ui);
}, 120_000);
afterAll(async () => ui?.close());

const texts = (selector: string) => page.locator(selector).allInnerTexts();
const offsetsOf = (selector: string) =>
  page.locator(selector).evaluateAll((els) => els.map((e) => Number((e as unknown as { dataset: Record<string, string> }).dataset.offset)));
const chunk = (llmRequestOffset: number, sequence: number, text: string) => ({
  type: "agent/llm-response-chunks" as const,
  payload: { chunks: [{ choices: [{ index: 0, delta: { content: text } }] }], llmRequestOffset, sequence },
});

describe("web UI", () => {
  let requestOffset = 0;

  it("creates an agent and sends a message", { timeout: 60_000 }, async () => {
    await page.goto(gw.url);
    await page.getByTestId("create-path").fill(PATH);
    await page.getByTestId("create-button").click();
    await page.getByTestId("conn-status").filter({ hasText: "live" }).waitFor({ timeout: 15_000 });
    await page.getByTestId("composer").fill("How many open pull requests are there?");
    await page.getByTestId("send").click();
    await page.getByTestId("msg-user").filter({ hasText: "How many open pull requests" }).waitFor({ timeout: 15_000 });
    const events = await ts.store.read(PATH);
    expect(events[0]!.type).toBe("agent/created");
    expect(events.at(-1)).toMatchObject({ type: "agents/context-added", payload: { role: "user", content: "How many open pull requests are there?" } });
  });

  it("shows the reply streaming live before the request settles", { timeout: 60_000 }, async () => {
    const [requested] = (await ts.store.append(PATH, [{ type: "agent/llm-request-requested", payload: { model: "offline/demo", expiresAt: "2099-01-01T00:00:00.000Z" } }])).events;
    requestOffset = requested!.offset;
    await page.getByTestId("request-marker").filter({ hasText: `request @${requestOffset}` }).waitFor({ timeout: 15_000 });
    await ts.store.append(PATH, [chunk(requestOffset, 0, "Let me count ")]);
    await ts.store.append(PATH, [chunk(requestOffset, 1, "them with a script.")]);
    await page.getByTestId("msg-streaming").filter({ hasText: "Let me count them with a script." }).waitFor({ timeout: 15_000 });
    // Nothing has settled yet: the text came from the live lane alone.
    expect((await ts.store.read(PATH)).some((e) => e.type === "agent/llm-request-settled")).toBe(false);
  });

  it("shows the prose and the script apart while they stream, from the reducer's previews", { timeout: 60_000 }, async () => {
    const preview = (type: "render/message-delta" | "render/script-delta", payload: Record<string, unknown>) =>
      ts.store.append(PATH, [{ type, payload: { llmRequestOffset: requestOffset, ...payload }, ephemeral: true }]);
    await ts.store.append(PATH, [chunk(requestOffset, 2, '\n\n<codemode status="Counting pulls">\nasync (itx) => (await itx.repo')]);
    await preview("render/message-delta", { text: "Let me count them with a script." });
    await preview("render/script-delta", { code: "async (itx) => (await itx.repo", status: "Counting pulls" });
    await page.getByTestId("script-streaming").filter({ hasText: "async (itx) => (await itx.repo" }).waitFor({ timeout: 15_000 });
    await preview("render/script-delta", { code: '.listPulls({ state: "open" })).length' });
    await page.getByTestId("script-streaming").filter({ hasText: '.listPulls({ state: "open" })).length' }).waitFor({ timeout: 15_000 });
    // The raw markup stays out of the bubble: it shows the prose preview only.
    expect(await texts('[data-testid="msg-streaming"]')).toEqual(["Let me count them with a script."]);
    expect(await texts('[data-testid="script-streaming-status"]')).toEqual(["Counting pulls"]);
    expect((await ts.store.read(PATH)).some((e) => e.type.startsWith("render/"))).toBe(false);
  });

  it("shows the script with its status, then its result and duration", { timeout: 60_000 }, async () => {
    const reply = "Let me count them with a script.\n\n```ts\nasync (itx) => (await itx.repo.listPulls({ state: \"open\" })).length\n```";
    const settled = await ts.store.append(PATH, [
      { type: "agents/context-added", payload: { role: "assistant", content: reply, llmRequestOffset: requestOffset }, idempotencyKey: `agent/assistant-context@${requestOffset}` },
      { type: "agent/llm-request-settled", payload: { requestOffset, durationMs: 900, result: { status: "succeeded", text: reply } }, idempotencyKey: `agent/settle/${requestOffset}` },
    ]);
    const assistantOffset = settled.events[0]!.offset;
    const executionId = `agent-output:${assistantOffset}`;
    await ts.store.append(PATH, [
      { type: "capability-host/script-run-requested", payload: { code: 'async (itx) => (await itx.repo.listPulls({ state: "open" })).length', executionId, expiresAt: "2099-01-01T00:00:00.000Z" } },
    ]);
    await page.getByTestId("msg-streaming").waitFor({ state: "detached", timeout: 15_000 });
    await page.getByTestId("script-streaming").waitFor({ state: "detached", timeout: 15_000 });
    await page.getByTestId("msg-assistant").filter({ hasText: "Let me count them with a script." }).waitFor({ timeout: 15_000 });
    await page.getByTestId("script-status").filter({ hasText: "requested" }).waitFor({ timeout: 15_000 });
    await ts.store.append(PATH, [{ type: "capability-host/script-run-started", payload: { executionId } }]);
    await page.getByTestId("script-status").filter({ hasText: "running" }).waitFor({ timeout: 15_000 });
    await ts.store.append(PATH, [
      { type: "capability-host/script-run-settled", payload: { executionId, settlement: { status: "succeeded", result: { openPulls: 3 } } } },
    ]);
    await page.getByTestId("script-status").filter({ hasText: "succeeded" }).waitFor({ timeout: 15_000 });
    expect(await texts('[data-testid="script-result"]')).toEqual([JSON.stringify({ openPulls: 3 }, null, 2)]);
    const [duration] = await texts('[data-testid="script-duration"]');
    expect(duration).toMatch(/^in \d+(\.\d)?(ms|s)$/);
    expect(await texts('[data-testid="msg-streaming"]')).toEqual([]);
  });

  it("opens what the model saw for the request", { timeout: 60_000 }, async () => {
    await page.getByTestId("request-marker").filter({ hasText: `request @${requestOffset}` }).getByTestId("what-the-model-saw").click();
    await page.getByTestId("request-view").waitFor({ timeout: 15_000 });
    const shown = await texts('[data-testid="rendered-message"] pre');
    const res = await fetch(`${gw.url}/v1/agents/${encodeURIComponent(PATH)}/requests/${requestOffset}`);
    const expected = ((await res.json()) as { messages: { content: string }[] }).messages.map((m) => m.content);
    expect(shown.map((s) => s.trim())).toEqual(expected.map((s) => s.trim()));
    expect(shown.at(-2)).toContain("How many open pull requests are there?");
    expect(shown.at(-1)).toMatch(/^Requested at: /);
    await page.goBack();
    await page.getByTestId("chat").waitFor({ timeout: 15_000 });
  });

  it("recovers from a dropped connection with no lost or duplicated message", { timeout: 60_000 }, async () => {
    await page.getByTestId("conn-status").filter({ hasText: "live" }).waitFor({ timeout: 15_000 });
    // Kill every connection the gateway holds (the UI's SSE stream included), then append
    // while the UI is reconnecting.
    gw.gateway.server.closeAllConnections();
    await page.getByTestId("conn-status").filter({ hasText: "reconnecting" }).waitFor({ timeout: 10_000 });
    await ts.store.append(PATH, [{ type: "agents/web-message-sent", payload: { message: "There are 3 open pull requests." } }]);
    await page.getByTestId("msg-assistant").filter({ hasText: "There are 3 open pull requests." }).waitFor({ timeout: 20_000 });
    await page.getByTestId("conn-status").filter({ hasText: "live" }).waitFor({ timeout: 15_000 });
    await ts.store.append(PATH, [{ type: "agents/context-added", payload: { role: "user", content: "Thanks!", actor: { type: "user", origin: "web" } } }]);
    await page.getByTestId("msg-user").filter({ hasText: "Thanks!" }).waitFor({ timeout: 15_000 });
    const bubbles = [...(await offsetsOf('[data-testid="msg-user"]')), ...(await offsetsOf('[data-testid="msg-assistant"]'))];
    expect(new Set(bubbles).size).toBe(bubbles.length);
    expect(await texts('[data-testid="msg-user"]')).toEqual(["How many open pull requests are there?", "Thanks!"]);
    expect(await texts('[data-testid="msg-assistant"]')).toEqual(["Let me count them with a script.", "There are 3 open pull requests."]);
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    // The raw event stream shows every durable offset exactly once.
    await page.getByRole("link", { name: /^Events/ }).click();
    const last = await ts.store.lastOffset(PATH);
    await waitFor(async () => (await offsetsOf('[data-testid="events-table"] tbody tr')).length === last, { timeoutMs: 15_000, what: "all events in the table" });
    expect(await offsetsOf('[data-testid="events-table"] tbody tr')).toEqual(Array.from({ length: last }, (_, i) => i + 1));
  });

  it("lists an agent with no summary title under a title from its first user message", { timeout: 60_000 }, async () => {
    await page.goto(`${gw.url}/#/`);
    const row = page.locator(`[data-testid="agents-table"] tr[data-path="${PATH}"]`);
    await row.filter({ hasText: "How many open pull requests are there?" }).waitFor({ timeout: 15_000 });
    const link = await row.locator("td").first().locator("a").innerText();
    expect(link).toBe("How many open pull requests are there?");
    expect(await row.locator("td").first().innerText()).toContain(PATH);
  });

  it("lists the agent with its title, activity, waiting state and open request", { timeout: 60_000 }, async () => {
    await ts.store.append(PATH, [{ type: "agent/summary-updated", payload: { title: "PR counter", activity: "Counting pull requests", waitingFor: "user_input" } }]);
    const [open] = (await ts.store.append(PATH, [{ type: "agent/llm-request-requested", payload: { model: "offline/demo", expiresAt: "2099-01-01T00:00:00.000Z" } }])).events;
    await page.goto(`${gw.url}/#/`);
    const row = page.locator(`[data-testid="agents-table"] tr[data-path="${PATH}"]`);
    await row.filter({ hasText: "PR counter" }).waitFor({ timeout: 15_000 });
    const cells = await row.locator("td").allInnerTexts();
    expect(cells[0]).toContain("PR counter");
    expect(cells[0]).toContain(PATH);
    expect(cells[1]).toBe("Counting pull requests");
    expect(cells[2]).toBe("user_input");
    expect(cells[3]).toBe(`@${open!.offset} running`);
    expect(cells[4]).toBe(String(open!.offset));
  });

  it("shows bidirectional controls in messages, titles and payloads as their escapes, so what is shown is what is stored", { timeout: 60_000 }, async () => {
    // Trojan Source: U+202E shows the rest of a line reversed, so a message or a script's code
    // could display one thing and hold another (red-team).
    const spoofed = "pay \u202eroF evil\u2066 done";
    await ts.store.append(PATH, [
      { type: "agents/context-added", payload: { role: "user", content: spoofed, actor: { type: "user", origin: "web" } } },
      { type: "agent/summary-updated", payload: { title: "title \u202eelit", activity: "x", waitingFor: "user_input" } },
    ]);
    await page.goto(`${gw.url}/#/agent/${encodeURIComponent(PATH)}`);
    const bubble = page.getByTestId("msg-user").filter({ hasText: "pay \\u202eroF evil\\u2066 done" });
    await bubble.waitFor({ timeout: 15_000 });
    await page.getByRole("link", { name: /^Events/ }).click();
    await page.locator('[data-testid="events-table"] tbody tr').last().waitFor({ timeout: 15_000 });
    const table = await page.getByTestId("events-table").innerText();
    expect(table).toContain("\\u202e");
    await page.goto(`${gw.url}/#/`);
    const row = page.locator(`[data-testid="agents-table"] tr[data-path="${PATH}"]`);
    await row.filter({ hasText: "title \\u202eelit" }).waitFor({ timeout: 15_000 });
    // Nowhere on the pages is the control itself
    for (const text of [await page.locator("body").innerText(), table]) expect(text).not.toMatch(/[\u202a-\u202e\u2066-\u2069]/);
  });

  it("a message whose answer is lost after it landed is sent again with the same key and stored once", { timeout: 60_000 }, async () => {
    // Given the first send reaches the gateway but its answer never reaches the page (a reset)
    const sent: string[] = [];
    await page.route("**/v1/streams/**/events", async (route) => {
      if (route.request().method() !== "POST") return route.continue();
      sent.push(route.request().postData() ?? "");
      if (sent.length === 1) {
        await route.fetch();
        return route.abort("connectionreset");
      }
      return route.continue();
    });
    try {
      await page.goto(`${gw.url}/#/agent/${encodeURIComponent(PATH)}`);
      await page.getByTestId("conn-status").filter({ hasText: "live" }).waitFor({ timeout: 15_000 });
      await page.getByTestId("composer").fill("Sent once, answered late");
      await page.getByTestId("send").click();
      await page.getByTestId("msg-user").filter({ hasText: "Sent once, answered late" }).waitFor({ timeout: 15_000 });
      await waitFor(() => sent.length === 2, { timeoutMs: 10_000, what: "the page to send the message again" });
    } finally {
      await page.unroute("**/v1/streams/**/events");
    }
    // Then both sends carried one key, the stream holds the message once, and the composer is clear
    const keys = sent.map((body) => (JSON.parse(body) as { events: { idempotencyKey?: string }[] }).events[0]?.idempotencyKey);
    expect(keys[0]).toMatch(/^ui\/send\/[0-9a-f]{32}$/);
    expect(keys[1]).toBe(keys[0]);
    const stored = (await ts.store.read(PATH)).filter((e) => e.type === "agents/context-added" && e.payload.content === "Sent once, answered late");
    expect(stored).toHaveLength(1);
    await waitFor(async () => (await page.getByTestId("composer").inputValue()) === "", { timeoutMs: 5_000, what: "the composer to clear" });
    expect(await page.getByTestId("msg-user").filter({ hasText: "Sent once, answered late" }).count()).toBe(1);
  });
});
