// Structured logs: one pino logger per service, child loggers carry stream path, offset and
// request or execution ids.

import { pino, type Logger } from "pino";

export type { Logger } from "pino";

export function createLogger(service: string, level: string = process.env.LOG_LEVEL ?? "info"): Logger {
  return pino({ name: service, level, base: { service, pid: process.pid } });
}
