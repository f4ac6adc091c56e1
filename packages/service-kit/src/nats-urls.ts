// How a NATS_URL reads (servers separated by commas) and what of it may be printed. Imports
// nothing, so the quickstart's supervisor (which loads no workspace package) applies the same
// rules as the services.

/** The servers of a NATS_URL: separated by commas, spaces around each ignored. */
export function natsServers(url: string): string[] {
  return url.split(",").map((server) => server.trim());
}

/** A server URL as it may be logged: any `user:password@` (or token) in it replaced. */
export function withoutCredentials(server: string): string {
  return server.replace(/^([a-z]+:\/\/)?[^@/]*@/i, (_match, scheme: string | undefined) => `${scheme ?? ""}***@`);
}

/** A NATS_URL (servers separated by commas) as it may be logged. */
export function serversWithoutCredentials(url: string): string {
  return natsServers(url).map(withoutCredentials).join(",");
}
