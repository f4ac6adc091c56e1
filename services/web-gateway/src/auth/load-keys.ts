// Loads the hashed API keys from a file or an env value, parsed with the keys schema (a
// malformed keys file stops the gateway at start-up rather than letting it run open), and
// follows the file afterwards: a key added, rotated or revoked there (a Kubernetes Secret
// updated in place, `pnpm agents keys create`) takes effect without a restart. A file that no
// longer parses keeps the keys in force and says so.
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import type { Logger } from "@agentrt/service-kit";
import { LiveSubscriptionLimiter } from "../http/live-limits.ts";
import type { Authenticator } from "./authenticator.ts";
import { keysFileSchema, type StoredKey } from "./keys.ts";

export interface KeySource {
  readonly file?: string;
  readonly json?: string;
}

/** The keys, and the file's text they came from (what `followKeysFile` compares against). */
export interface LoadedKeys {
  readonly keys: StoredKey[];
  readonly fileText?: string;
}

export function loadKeys(source: KeySource): LoadedKeys {
  const fileText = source.file === undefined ? undefined : readFileSync(source.file, "utf8");
  return { keys: keysFrom(fileText, source.json), ...(fileText === undefined ? {} : { fileText }) };
}

function keysFrom(fileText: string | undefined, json: string | undefined): StoredKey[] {
  return [fileText, json].filter((t): t is string => t !== undefined).flatMap((text) => keysFileSchema.parse(JSON.parse(text)).keys);
}

/**
 * Puts new keys in force: a key revoked or changed stops working, and the live streams it
 * opened (SSE, WebSocket, gRPC) end, since each was authorized once, when it opened.
 */
export function applyKeys(auth: Authenticator, live: LiveSubscriptionLimiter, log: Logger): (keys: StoredKey[]) => void {
  return (keys) => {
    for (const keyId of auth.replaceKeys(keys)) {
      const ended = live.endAll(LiveSubscriptionLimiter.holderOf({ keyId, scopes: [] }, undefined));
      if (ended > 0) log.info({ keyId, ended }, "live streams of a revoked or changed key ended");
    }
  };
}

/**
 * Reads the keys file every `everyMs` and hands over the keys whenever its text differs from
 * `since` (the text the keys in force came from) or from the last it handed over, and parses.
 * Compared with what was loaded, not read again when following starts: the gateway waits for
 * NATS in between, and a key revoked meanwhile would otherwise never be applied. Returns the
 * function that stops following it.
 */
export function followKeysFile(
  source: KeySource & { file: string },
  options: { since: string; everyMs: number; onKeys: (keys: StoredKey[]) => void; log: Logger },
): () => void {
  let last = options.since;
  let reading = false;
  const check = async (): Promise<void> => {
    if (reading) return;
    reading = true;
    try {
      const text = await readFile(source.file, "utf8");
      if (text === last) return;
      last = text;
      const keys = keysFrom(text, source.json);
      options.onKeys(keys);
      options.log.info({ file: source.file, keys: keys.length }, "API keys reloaded from the keys file");
    } catch (error) {
      options.log.error({ file: source.file, err: error instanceof Error ? error.message : String(error) }, "the keys file could not be read or parsed; the keys in force are kept");
    } finally {
      reading = false;
    }
  };
  const timer = setInterval(() => void check(), options.everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
