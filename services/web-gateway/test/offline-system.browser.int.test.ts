// The whole system behind the UI, with NO model key: nats-server, reducer, driver (offline
// model), capability host and the gateway, each its own process. In headless Chromium the user
// creates an agent and sends a message; the offline model's reply, its script (status, result,
// duration), the script's chat message and "what the model saw" all show; then the gateway
// process is killed and restarted and the UI recovers with no duplicated message.
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freeLoopbackPort, startNatsServer, waitFor, type NatsServer } from "@agentrt/testing";
import { ProcessGroup, type ServiceProcess } from "../../../test/support/processes.ts";
import { type BrowserPage, ensureUiBuilt, openBrowserPage, screenshotPath } from "./support/browser.ts";

const PATH = `/agents/web/offline-${Date.now().toString(36)}`;
let nats: NatsServer;
let group: ProcessGroup;
let gatewayProc: ServiceProcess;
let url: string;
let browser: BrowserPage;
let page: Page;

beforeAll(async () => {
  ensureUiBuilt();
  nats = await startNatsServer();
  const port = await freeLoopbackPort();
  url = `http://127.0.0.1:${port}`;
  // No OPENAI_* variables: the driver answers with the built-in offline model.
  // (The children inherit process.env, so any model settings there are removed first.)
  for (const key of ["OPENAI_API_KEY", "OPENAI_BASE_URL", "LLM_PROVIDERS"]) delete process.env[key];
  const env: Record<string, string> = { NATS_URL: nats.url, OPS_PORT: "0", PARTITION_COUNT: "8", REDUCER_LEASE_TTL_MS: "4000" };
  group = new ProcessGroup();
  group.add("reducer", "agent-reducer", { ...env, REDUCER_ID: "reducer-1" }).start();
  group.add("driver", "llm-driver", env).start();
  group.add("host", "capability-host", env).start();
  gatewayProc = group.add("gateway", "web-gateway", { ...env, HTTP_PORT: String(port), GRPC_PORT: "0", HTTP_HOST: "127.0.0.1", AGENTRT_DEV_MODE: "1", UI_BUILD_ON_START: "0" }).start();
  await waitFor(async () => (await fetch(`${url}/v1/openapi.json`).catch(() => undefined))?.ok === true, { timeoutMs: 90_000, intervalMs: 200, what: "the gateway" });
  browser = await openBrowserPage({ width: 1100, height: 1000 });
  page = browser.page;
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await group?.stopAll();
  await nats?.stop();
});

const texts = (selector: string) => page.locator(selector).allInnerTexts();
const offsets = (selector: string) => page.locator(selector).evaluateAll((els) => els.map((e) => (e as unknown as { dataset: Record<string, string> }).dataset.offset));

async function orLogs<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    const events = await fetch(`${url}/v1/streams/${encodeURIComponent(PATH)}/events?limit=1000`).then((r) => r.json(), () => null);
    const summary = (events as { events?: { offset: number; type: string; payload: unknown }[] } | null)?.events?.map((e) => `@${e.offset} ${e.type} ${JSON.stringify(e.payload).slice(0, 160)}`);
    process.stdout.write(`${group.logs().slice(-6000)}\n--- stream ---\n${(summary ?? []).join("\n")}\n`);
    throw error;
  }
}

describe("the offline model through every service", () => {
  it("answers in the UI with a reply, a script, its result and its chat message", { timeout: 180_000 }, async () => {
    await page.goto(url);
    await page.getByTestId("create-path").fill(PATH);
    await page.getByTestId("create-button").click();
    await page.getByTestId("conn-status").filter({ hasText: "live" }).waitFor({ timeout: 30_000 });
    await page.getByTestId("composer").fill("Show me what you can do");
    await page.getByTestId("send").click();
    await orLogs(page.getByTestId("msg-assistant").filter({ hasText: "[offline model]" }).first().waitFor({ timeout: 120_000 }));
    await orLogs(page.getByTestId("script-status").filter({ hasText: "succeeded" }).first().waitFor({ timeout: 120_000 }));
    const [result] = await texts('[data-testid="script-result"]');
    expect(JSON.parse(result!)).toMatchObject({ sentMessage: true, streamPath: PATH, firstEventType: "agent/created" });
    expect((await texts('[data-testid="script-duration"]'))[0]).toMatch(/^in \d+(\.\d)?(ms|s)$/);
    await page.getByTestId("msg-assistant").filter({ hasText: "Hello from a codemode script" }).waitFor({ timeout: 60_000 });
    await page.screenshot({ path: screenshotPath("screenshot-offline.png"), fullPage: true });
  });

  it("shows what the model saw for the first request", { timeout: 60_000 }, async () => {
    await page.getByTestId("what-the-model-saw").first().click();
    await page.getByTestId("request-view").waitFor({ timeout: 30_000 });
    const shown = await texts('[data-testid="rendered-message"] pre');
    expect(shown[1]).toContain('<section key="identity">');
    expect(shown.some((m) => m.includes("Show me what you can do"))).toBe(true);
    expect(shown.at(-1)).toMatch(/^Requested at: /);
    await page.goBack();
    await page.getByTestId("chat").waitFor({ timeout: 15_000 });
  });

  it("recovers after the gateway process is killed and restarted, with no duplicated message", { timeout: 180_000 }, async () => {
    const before = await offsets('[data-testid="msg-user"], [data-testid="msg-assistant"]');
    await gatewayProc.signal("SIGKILL");
    await page.getByTestId("conn-status").filter({ hasText: "reconnecting" }).waitFor({ timeout: 15_000 });
    gatewayProc.start();
    await orLogs(page.getByTestId("conn-status").filter({ hasText: "live" }).waitFor({ timeout: 90_000 }));
    await page.getByTestId("composer").fill("And once more");
    await page.getByTestId("send").click();
    await page.getByTestId("msg-user").filter({ hasText: "And once more" }).waitFor({ timeout: 30_000 });
    await orLogs(waitFor(async () => (await texts('[data-testid="msg-assistant"]')).filter((t) => t.includes("[offline model]")).length > 2, { timeoutMs: 120_000, what: "a reply to the second message" }));
    const after = await offsets('[data-testid="msg-user"], [data-testid="msg-assistant"]');
    expect(new Set(after).size).toBe(after.length);
    expect(after.slice(0, before.length)).toEqual(before);
    expect((await texts('[data-testid="msg-user"]')).filter((t) => t === "And once more")).toHaveLength(1);
  });
});
