// What of a NATS server URL may be printed. Imports nothing, so the quickstart's supervisor
// (which loads no workspace package) applies the same rule as the services.

/** A server URL as it may be logged: any `user:password@` (or token) in it replaced. */
export function withoutCredentials(server: string): string {
  return server.replace(/^([a-z]+:\/\/)?[^@/]*@/i, (_match, scheme: string | undefined) => `${scheme ?? ""}***@`);
}

/** A NATS_URL (servers separated by commas) as it may be logged. */
export function serversWithoutCredentials(url: string): string {
  return url
    .split(",")
    .map((server) => withoutCredentials(server.trim()))
    .join(",");
}
