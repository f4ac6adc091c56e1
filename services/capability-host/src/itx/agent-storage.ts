// Agent-scoped storage behind itx.kv and itx.files. One KV bucket and one object store are
// shared by all agents; each agent's entries live under its own prefix, derived from its
// stream path (whose segments contain no "." or ":"), so no agent can name another's keys.

import type { KV } from "@nats-io/kv";
import type { ObjectStore } from "@nats-io/obj";

export const AGENT_KV_BUCKET = "AGENT_KV";
export const AGENT_FILES_BUCKET = "AGENT_FILES";

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
    const data = await this.store.getBlob(this.name(agentPath, path));
    if (data === null) throw new ItxInputError(`itx.files: no file "${String(path)}" in this agent's workspace`);
    return data;
  }

  async write(agentPath: string, path: unknown, data: Uint8Array): Promise<{ path: string; size: number }> {
    const info = await this.store.putBlob({ name: this.name(agentPath, path) }, data);
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
