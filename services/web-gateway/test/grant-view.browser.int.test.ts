// The agent view shows the agent's script authority (read-only): its own subtree and the
// prefixes granted on create, updated live when a configure changes the grant.
import type { Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { TestStore } from "./support/store.ts";
import type { TestGateway } from "./support/gateway-harness.ts";
import { startUiStack, type UiStack } from "./support/browser.ts";
import { http } from "./support/http.ts";

const PATH = "/agents/web/granted";
let ts: TestStore;
let gw: TestGateway;
let ui: UiStack;
let page: Page;

beforeAll(async () => {
  ui = await startUiStack();
  ({ ts, gw, page } = ui);
}, 120_000);
afterAll(async () => ui?.close());

it("shows the grant of the agent and follows a configure", { timeout: 60_000 }, async () => {
  const created = await http(gw.url, "POST", "/v1/agents", { body: { streamPath: PATH, grant: [{ prefix: "/shared/board", verbs: ["read"] }] } });
  expect(created.status).toBe(201);
  await page.goto(`${gw.url}/#/agent/${encodeURIComponent(PATH)}`);
  const entries = page.getByTestId("agent-grant-entry");
  await entries.filter({ hasText: "/shared/board · read" }).waitFor({ state: "attached", timeout: 15_000 });
  expect(await page.getByTestId("agent-grant").locator("summary").innerText()).toContain(`${PATH} (read, append) + 1 granted prefix`);

  await ts.store.append(PATH, [{ type: "agent/configured", payload: { config: {}, grant: [{ prefix: "/shared/inbox", verbs: ["read", "append"] }] } }]);
  await entries.filter({ hasText: "/shared/inbox · read, append" }).waitFor({ state: "attached", timeout: 15_000 });
  expect(await entries.allTextContents()).toEqual(["/shared/inbox · read, append"]);
});
