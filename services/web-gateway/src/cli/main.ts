// `pnpm agents <command> ...`: the project's command line. Each command lives in
// `commands/<name>.ts` and returns an exit code; this file only dispatches.

import { createCommand, listCommand, requestCommand, sendCommand, stateCommand, usageCommand } from "./commands/agents.ts";
import { auditCommand } from "./commands/audit.ts";
import { pauseCommand, resumeCommand, stopCommand } from "./commands/controls.ts";
import { keysCommand } from "./commands/keys.ts";
import { replayCommand } from "./commands/replay.ts";
import { tailCommand } from "./commands/tail.ts";
import { terminalSafe } from "./terminal-safe.ts";

type Command = (args: readonly string[], out: (text: string) => void, err: (text: string) => void) => Promise<number>;

const commands: Record<string, { run: Command; summary: string }> = {
  create: { run: createCommand, summary: "create PATH [--prompt-file FILE] [--project NAME]   create an agent (the birth batch)" },
  send: { run: sendCommand, summary: "send PATH MESSAGE... [--interrupt]   send a user message" },
  tail: { run: tailCommand, summary: "tail PATH [--from N] [--count N]   follow a stream live, with the reply streaming" },
  stop: { run: stopCommand, summary: "stop PATH   interrupt the reply in progress and pause the agent (as the UI's Stop)" },
  pause: { run: pauseCommand, summary: "pause PATH   hold the agent's own follow-up turns" },
  resume: { run: resumeCommand, summary: "resume PATH   release a paused agent" },
  state: { run: stateCommand, summary: "state PATH   the agent's folded state" },
  usage: { run: usageCommand, summary: "usage PATH [--json]   what the agent's stream and its tenant hold against their quotas" },
  list: { run: listCommand, summary: "list [PREFIX]   agents with their summaries" },
  audit: { run: auditCommand, summary: "audit PATH... | --prefix P [--json]   check each stream's invariants; exit 1 on a violation" },
  request: { run: requestCommand, summary: "request PATH (N | --last) [--json]   exactly what the model saw for the request at offset N, or the latest" },
  keys: {
    run: keysCommand,
    summary:
      "keys create [--prefix P] [--verbs V,...] [--name N] [--file F]   mint an API key for paths under P with verbs V (read, append, operate, admin); no flags: a read key for /. Prints the key once and stores its salted hash in F (default $AGENTRT_KEYS_FILE, else .data/keys.json)",
  },
  replay: {
    run: replayCommand,
    summary: "replay FILE [--placeholder-protocol] [--runtime] [--no-project-worker] [--agents-md FILE] [--decide OFFSET@ISO ...]   what the model saw, from a scenario file; the head decision at an offset and time",
  },
};

function usage(): string {
  const lines = Object.values(commands).map((c) => `  ${c.summary}`);
  return (
    `usage: agents <command> [args]\n\ncommands:\n${lines.join("\n")}\n\n` +
    "environment:\n  AGENTRT_URL       the gateway (default http://127.0.0.1:8080; use the port ./scripts/up.sh printed)\n" +
    "  AGENTRT_API_KEY   an API key (not needed against the quickstart's dev-mode gateway)\n"
  );
}

async function main(argv: readonly string[]): Promise<number> {
  const [name, ...args] = argv;
  // Everything printed passes through terminalSafe: it carries what agents' streams hold.
  const out = (text: string) => void process.stdout.write(terminalSafe(text));
  const err = (text: string) => void process.stderr.write(terminalSafe(text));
  if (name === undefined || name === "--help" || name === "-h") {
    (name === undefined ? err : out)(usage());
    return name === undefined ? 2 : 0;
  }
  const command = commands[name];
  if (command === undefined) {
    err(`unknown command "${name}"\n${usage()}`);
    return 2;
  }
  try {
    return await command.run(args, out, err);
  } catch (error) {
    err(`agents ${name}: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
