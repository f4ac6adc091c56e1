// One lint config for the whole workspace. Packages expose one public API each: importing
// another package's internals (`@agentrt/x/src/...`) is an error.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["**/node_modules/**", "**/dist/**", "**/generated/**", ".data/**", "services/web-gateway/ui/dist/**", "**/*.bundle.mjs", "**/*.bundle.cjs"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "no-restricted-imports": [
        "error",
        { patterns: [{ group: ["@agentrt/*/src/*", "@agentrt/*/src"], message: "Import the package's public API (its index.ts), not its internals." }] },
      ],
    },
  },
  {
    files: ["services/**/src/**/*.ts"],
    ignores: ["services/**/src/cli/**"],
    rules: { "no-console": "error" },
  },
);
