// Builds the web UI into ui/dist, which the gateway serves. `pnpm --filter @agentrt/web-gateway build:ui`.
import preact from "@preact/preset-vite";
import { defineConfig } from "vite";

export default defineConfig({
  root: import.meta.dirname,
  plugins: [preact()],
  build: { outDir: "dist", emptyOutDir: true, target: "es2022" },
  server: { proxy: { "/v1": "http://127.0.0.1:8080" } },
});
