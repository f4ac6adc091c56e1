// The chat's controls and empty state in headless Chromium, against the real reducer and driver
// (their own processes) and the fake model streaming slowly through the real `openai` client:
// a new agent shows what to do and its example prompt sends; Stop interrupts the streaming
// reply (the driver aborts the model call), pauses the agent and starts no new turn; Pause and
// Resume show in the chat as events; a long script line wraps inside its card.
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "@agentrt/testing";
import { startSystem, type System } from "../../../test/support/system.ts";
import { type BrowserPage, ensureUiBuilt, openBrowserPage, screenshotPath } from "./support/browser.ts";

const PATH = `/agents/web/controls-${Date.now().toString(36)}`;
// Long enough that the reply is still streaming when Stop is pressed, however loaded the machine.
const SLOW_REPLY = Array.from({ length: 400 }, (_, i) => `word${i}`).join(" ");
let system: System;
let url: string;
let browser: BrowserPage;
let page: Page;

beforeAll(async () => {
  ensureUiBuilt();
  system = await startSystem({ gateway: true, model: { defaultReply: { text: SLOW_REPLY, tokensPerSecond: 10 } } });
  url = system.gatewayUrl!;
  browser = await openBrowserPage({ width: 1000, height: 900 });
  page = browser.page;
}, 180_000);
afterAll(async () => {
  await browser?.close();
  await system?.stop();
});

const texts = (selector: string) => page.locator(selector).allInnerTexts();
const types = async () => (await system.store.read(PATH)).map((e) => e.type);
const state = async () => ((await (await fetch(`${url}/v1/agents/${encodeURIComponent(PATH)}/state`)).json()) as { state: Record<string, unknown> }).state;

describe("chat controls", () => {
  it("a new agent shows a hint and example prompts; clicking one sends it", { timeout: 90_000 }, async () => {
    await page.goto(url);
    await page.getByTestId("create-path").fill(PATH);
    await page.getByTestId("create-button").click();
    await page.getByTestId("conn-status").filter({ hasText: "live" }).waitFor({ timeout: 30_000 });
    await page.getByTestId("empty-chat").waitFor({ timeout: 15_000 });
    expect(await page.getByTestId("empty-chat").innerText()).toContain("This agent is new.");
    const examples = await texts('[data-testid="example-prompt"]');
    expect(examples.length).toBeGreaterThanOrEqual(2);
    await page.screenshot({ path: screenshotPath("screenshot-empty-agent.png") });
    await page.getByTestId("example-prompt").nth(1).click();
    await page.getByTestId("msg-user").filter({ hasText: examples[1]! }).waitFor({ timeout: 15_000 });
    await page.getByTestId("empty-chat").waitFor({ state: "detached", timeout: 15_000 });
    const sent = (await system.store.read(PATH)).filter((e) => e.type === "agents/context-added" && e.payload.role === "user");
    expect(sent.map((e) => (e.payload as { content: string }).content)).toEqual([examples[1]]);
  });

  it("Stop interrupts the streaming reply, pauses the agent and starts no new turn", { timeout: 120_000 }, async () => {
    await page.getByTestId("msg-streaming").filter({ hasText: "word3" }).waitFor({ timeout: 60_000 });
    expect(await page.getByTestId("pause").isVisible()).toBe(true);
    await page.getByTestId("stop").click();
    await page.getByTestId("chat-paused").filter({ hasText: "stopped by the user" }).waitFor({ timeout: 15_000 });
    await page.getByTestId("request-marker").filter({ hasText: "cancelled" }).waitFor({ timeout: 30_000 });
    await page.getByTestId("stop").waitFor({ state: "detached", timeout: 15_000 });
    await page.getByTestId("resume").waitFor({ timeout: 15_000 });
    expect(await page.getByTestId("paused-badge").isVisible()).toBe(true);
    // The driver really aborted the model call, well before the reply was complete.
    await waitFor(async () => system.model.requests[0]?.progress.clientAborted === true, { timeoutMs: 15_000, what: "the model call aborted" });
    expect(system.model.requests[0]!.progress.completed).toBe(false);
    const events = await system.store.read(PATH);
    const settled = events.filter((e) => e.type === "agent/llm-request-settled");
    expect(settled.map((e) => (e.payload as { result: { status: string; reason?: string } }).result)).toMatchObject([{ status: "cancelled", reason: "interrupted-by-user-input" }]);
    // Paused, nothing pending, nothing open: the reducer has nothing to start (the fold says so).
    const folded = await state();
    expect(folded.paused).toMatchObject({ reason: "stopped by the user" });
    expect(folded.pendingLlmRequestTrigger).toBeNull();
    expect(folded.openRequest).toBeNull();
    expect(events.filter((e) => e.type === "agent/llm-request-requested")).toHaveLength(1);
    await page.getByTestId("msg-assistant").filter({ hasText: "[Response interrupted" }).waitFor({ timeout: 15_000 });
    await page.screenshot({ path: screenshotPath("screenshot-stopped.png") });
  });

  it("Resume and Pause show in the chat as events and swap the button", { timeout: 60_000 }, async () => {
    await page.getByTestId("resume").click();
    await page.getByTestId("chat-resumed").filter({ hasText: "resumed by the user" }).waitFor({ timeout: 15_000 });
    await page.getByTestId("pause").waitFor({ timeout: 15_000 });
    expect(await page.getByTestId("paused-badge").count()).toBe(0);
    expect((await state()).paused).toBeNull();
    await page.getByTestId("pause").click();
    await page.getByTestId("chat-paused").filter({ hasText: "paused by the user" }).waitFor({ timeout: 15_000 });
    await page.getByTestId("resume").waitFor({ timeout: 15_000 });
    expect((await state()).paused).toMatchObject({ reason: "paused by the user" });
    expect((await texts('[data-testid="chat-paused"], [data-testid="chat-resumed"]')).map((t) => t.trim())).toEqual([
      "paused · stopped by the user",
      "resumed · resumed by the user",
      "paused · paused by the user",
    ]);
    expect((await types()).filter((t) => t === "agent/paused" || t === "agent/resumed")).toEqual(["agent/paused", "agent/resumed", "agent/paused"]);
  });

  it("a long script line wraps inside its card instead of being cut off", { timeout: 60_000 }, async () => {
    const longLine = `async (itx) => itx.repo.search(${JSON.stringify("x".repeat(40))}, { query: "${Array.from({ length: 40 }, (_, i) => `term${i}`).join(" OR ")}", marker: "END_OF_LONG_LINE" })`;
    await system.store.append(PATH, [
      { type: "capability-host/script-run-requested", payload: { code: longLine, executionId: "api:long-line", expiresAt: "2099-01-01T00:00:00.000Z" } },
    ]);
    const card = page.getByTestId("script").filter({ hasText: "api:long-line" });
    await card.waitFor({ timeout: 15_000 });
    // Runs in the page (this file is typed without the DOM lib, hence the narrow shapes).
    const geometry = await card.locator("pre.code").evaluate((pre) => {
      interface Rect { top: number; right: number }
      interface PageGlobals {
        document: { createRange(): { setStart(node: unknown, at: number): void; setEnd(node: unknown, at: number): void; getBoundingClientRect(): Rect } };
        innerWidth: number;
      }
      const el = pre as unknown as { firstChild: { textContent: string | null }; scrollWidth: number; clientWidth: number; getBoundingClientRect(): Rect };
      const page = globalThis as unknown as PageGlobals;
      const at = (el.firstChild.textContent ?? "").indexOf("END_OF_LONG_LINE");
      const range = page.document.createRange();
      range.setStart(el.firstChild, at);
      range.setEnd(el.firstChild, at + "END_OF_LONG_LINE".length);
      const marker = range.getBoundingClientRect();
      const box = el.getBoundingClientRect();
      return { scrollWidth: el.scrollWidth, clientWidth: el.clientWidth, markerRight: marker.right, boxRight: box.right, viewport: page.innerWidth, markerBelowTop: marker.top - box.top };
    });
    expect(geometry.scrollWidth).toBeLessThanOrEqual(geometry.clientWidth);
    expect(geometry.markerRight).toBeLessThanOrEqual(geometry.boxRight);
    expect(geometry.boxRight).toBeLessThanOrEqual(geometry.viewport);
    // The marker sits at the end of ONE source line, so below the first row it has wrapped.
    expect(geometry.markerBelowTop).toBeGreaterThan(20);
  });

  it("given a stream with a history of 6 000 events, when opened, then every event is listed and the chat shows the last", { timeout: 120_000 }, async () => {
    // Taken one by one, each event copied the list and folded a new state copying the context:
    // the tab's work grew with the square of the stream. Now in batches through one fold.
    const path = `${PATH}-long-history`;
    await system.store.append(path, [{ type: "agent/created", payload: {} }]);
    for (let batch = 0; batch < 6; batch++) {
      await system.store.append(path, Array.from({ length: 1_000 }, (_, i) => ({ type: "agents/context-added" as const, payload: { role: "user" as const, content: `history ${batch}-${i}`, llmRequestPolicy: { behaviour: "dont-trigger-request" as const } } })));
    }
    await page.goto(`${url}/#/agent/${encodeURIComponent(path)}`);
    await page.getByTestId("msg-user").filter({ hasText: "history 5-999" }).waitFor({ timeout: 60_000 });
    await page.getByRole("link", { name: "Events (6001)" }).waitFor({ timeout: 30_000 });
    expect(await page.getByTestId("msg-user").count()).toBe(6_000);
    // The controls follow the fold: no request open, not paused
    expect(await page.getByTestId("paused-badge").count()).toBe(0);
  });
});
