export * from "./repo-provider.ts";
