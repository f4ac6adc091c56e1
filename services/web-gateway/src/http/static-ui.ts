// Serves the built web UI (Vite output) for every non-API GET; unknown paths fall back to
// index.html so client-side routes work. A missing build gets a page that says how to build.
// The target is attacker-controlled: a malformed one (`/%`, `/%E0%A4%A`, `%00`, very long) is a
// plain 400, and no failure here may escape as a rejected promise.

import { readFile, stat } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { extname, join, normalize, sep } from "node:path";
import { GatewayError } from "../errors.ts";
import { decodePath, parseRequestTarget } from "./request-target.ts";

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".json": "application/json",
  ".ico": "image/x-icon",
};

export const UI_NOT_BUILT_HTML = `<!doctype html><meta charset="utf-8"><title>agentrt</title>
<h1>The web UI is not built yet</h1>
<p>Run <code>pnpm --filter @agentrt/web-gateway build:ui</code> and reload. The API is up: <a href="/v1/openapi.json">/v1/openapi.json</a>.</p>`;

export async function serveUi(distDir: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  let pathname: string;
  try {
    pathname = decodePath(parseRequestTarget(req.url).pathname);
  } catch (error) {
    const message = error instanceof GatewayError ? error.message : "Invalid request target.";
    res.writeHead(400, { "content-type": "text/plain; charset=utf-8", connection: "close" });
    res.end(`${message}\n`);
    return;
  }
  const candidate = normalize(join(distDir, pathname));
  const inside = candidate === distDir || candidate.startsWith(distDir + sep);
  let file = inside ? candidate : join(distDir, "index.html");
  try {
    if (!(await stat(file)).isFile()) file = join(distDir, "index.html");
  } catch {
    file = join(distDir, "index.html");
  }
  try {
    const body = await readFile(file);
    const immutable = file.includes(`${sep}assets${sep}`);
    res.writeHead(200, {
      "content-type": TYPES[extname(file)] ?? "application/octet-stream",
      "cache-control": immutable ? "public, max-age=31536000, immutable" : "no-cache",
    });
    res.end(body);
  } catch {
    res.writeHead(503, { "content-type": "text/html; charset=utf-8" });
    res.end(UI_NOT_BUILT_HTML);
  }
}
