// The logger a test hands to the code under test: silent, unless TEST_LOG_FILE names a file to
// write debug logs to (sync, so a crash keeps them) or TEST_LOG_LEVEL asks for a level.
import { destination, pino, type Logger } from "pino";

export function testLogger(name = "test"): Logger {
  const file = process.env.TEST_LOG_FILE;
  if (file !== undefined) return pino({ name, level: "debug" }, destination({ dest: file, sync: true }));
  return pino({ name, level: process.env.TEST_LOG_LEVEL ?? "silent" });
}
