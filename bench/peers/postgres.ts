// A throwaway PostgreSQL database per contender run (local server, user postgres, trust), and
// the server processes that serve a pool's connections, so their CPU counts for the contender.

import pg from "pg";

export const PG_ADMIN_URL = process.env.PEERS_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

export function databaseUrl(database: string): string {
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${database}`;
  return url.toString();
}

export async function createDatabase(database: string): Promise<string> {
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    await admin.query(`CREATE DATABASE "${database}"`);
  } finally {
    await admin.end();
  }
  return databaseUrl(database);
}

export async function dropDatabase(database: string): Promise<void> {
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

/** The pids of every backend connected to `database` (the pools must be open already). */
export async function backendPids(database: string): Promise<number[]> {
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  try {
    const rows = await admin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [database]);
    return rows.rows.map((r) => r.pid);
  } finally {
    await admin.end();
  }
}

/** Opens all of a pool's connections at once, so the backends exist before CPU is sampled. */
export async function fillPool(pool: pg.Pool, size: number): Promise<void> {
  const clients = await Promise.all(Array.from({ length: size }, () => pool.connect()));
  for (const c of clients) c.release();
}
