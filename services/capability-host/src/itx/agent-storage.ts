// Agent-scoped storage behind itx.kv and itx.files. One KV bucket and one object store are
// shared by all agents; each agent's entries live under its own prefix, derived from its
// stream path (whose segments contain no "." or ":"), so no agent can name another's keys.

import type { KV } from "@nats-io/kv";
import type { ObjectStore } from "@nats-io/obj";

export const AGENT_KV_BUCKET = "AGENT_KV";
export const AGENT_FILES_BUCKET = "AGENT_FILES";
/**
 * The largest file a script may write or read through itx.files. A read is handed to the
 * sandbox whole (bytes as an array of numbers), so without a bound one call on a large file
 * held several times its size in the host process.
 */
export const ITX_FILE_MAX_BYTES = 4 * 1024 * 1024;

const USER_KEY = /^[-/_=.a-zA-Z0-9]+$/;

export class ItxInputError extends Error {
  override readonly name = "ItxInputError";
}

export class AgentKv {
  constructor(private readonly kv: KV) {}

  private key(agentPath: string, key: unknown): string {
    if (typeof key !== "string" || !USER_KEY.test(key) || key.startsWith(".") || key.endsWith(".")) {
      throw new ItxInputError(`itx.kv: key ${JSON.stringify(key)} must be a non-empty string of letters, digits, "-", "_", "/", "=", "." (not starting or ending with ".")`);
    }
    return `${agentPath.slice(1)}.${key}`;
  }

  async get(agentPath: string, key: unknown): Promise<unknown> {
    const entry = await this.kv.get(this.key(agentPath, key));
    if (entry === null || entry.operation !== "PUT") return null;
    return JSON.parse(entry.string()) as unknown;
  }

  async set(agentPath: string, key: unknown, value: unknown): Promise<void> {
    await this.kv.put(this.key(agentPath, key), JSON.stringify(value ?? null));
  }

  async delete(agentPath: string, key: unknown): Promise<void> {
    await this.kv.delete(this.key(agentPath, key));
  }

  async list(agentPath: string, prefix: string): Promise<string[]> {
    const scope = `${agentPath.slice(1)}.`;
    const keys: string[] = [];
    for await (const k of await this.kv.keys(`${scope}>`)) {
      const own = k.slice(scope.length);
      if (own.startsWith(prefix)) keys.push(own);
    }
    return keys.sort();
  }
}

export class AgentFiles {
  constructor(private readonly store: ObjectStore) {}

  private name(agentPath: string, path: unknown): string {
    if (typeof path !== "string" || path.length === 0 || path.startsWith("/") || path.split("/").some((s) => s === ".." || s === "")) {
      throw new ItxInputError(`itx.files: path ${JSON.stringify(path)} must be relative ("notes/a.md"), with no "..", "//" or leading "/"`);
    }
    return `${agentPath}:${path}`;
  }

  async bytes(agentPath: string, path: unknown): Promise<Uint8Array> {
    const name = this.name(agentPath, path);
    const missing = () => new ItxInputError(`itx.files: no file "${String(path)}" in this agent's workspace`);
    // Its size first: a file over the bound is refused before it is loaded.
    const info = await this.store.info(name);
    if (info === null || info.deleted) throw missing();
    if (info.size > ITX_FILE_MAX_BYTES) throw tooLarge(path, info.size, "read");
    const data = await this.store.getBlob(name);
    if (data === null) throw missing();
    // Replaced by a larger one in between.
    if (data.length > ITX_FILE_MAX_BYTES) throw tooLarge(path, data.length, "read");
    return data;
  }

  async write(agentPath: string, path: unknown, data: Uint8Array): Promise<{ path: string; size: number }> {
    const name = this.name(agentPath, path);
    if (data.length > ITX_FILE_MAX_BYTES) throw tooLarge(path, data.length, "write");
    const info = await this.store.putBlob({ name }, data);
    return { path: path as string, size: info.size };
  }

  async list(agentPath: string, prefix: string): Promise<{ path: string; size: number }[]> {
    const scope = `${agentPath}:`;
    const infos = await this.store.list();
    return infos
      .filter((i) => !i.deleted && i.name.startsWith(scope + prefix))
      .map((i) => ({ path: i.name.slice(scope.length), size: i.size }))
      .sort((a, b) => a.path.localeCompare(b.path));
  }
}

function tooLarge(path: unknown, size: number, what: "read" | "write"): ItxInputError {
  return new ItxInputError(`itx.files: "${String(path)}" is ${size} bytes, over the ${ITX_FILE_MAX_BYTES}-byte limit on a file a script may ${what}`);
}
