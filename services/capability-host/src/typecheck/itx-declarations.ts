// The itx declarations shipped with the host (types/itx.d.ts): read once at startup.

import { readFileSync } from "node:fs";

export const ITX_DECLARATIONS_URL = new URL("../../types/itx.d.ts", import.meta.url);

export function loadItxDeclarations(): string {
  return readFileSync(ITX_DECLARATIONS_URL, "utf8");
}
