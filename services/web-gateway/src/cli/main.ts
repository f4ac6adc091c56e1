// `pnpm agents <command> ...`: the project's command line. Each command lives in
// `commands/<name>.ts` and returns an exit code; this file only dispatches.

import { replayCommand } from "./commands/replay.ts";

type Command = (args: readonly string[], out: (text: string) => void, err: (text: string) => void) => Promise<number>;

const commands: Record<string, { run: Command; summary: string }> = {
  replay: {
    run: replayCommand,
    summary: "replay FILE [--placeholder-protocol] [--runtime]   what the model saw, from a scenario file",
  },
};

function usage(): string {
  const lines = Object.values(commands).map((c) => `  ${c.summary}`);
  return `usage: agents <command> [args]\n\ncommands:\n${lines.join("\n")}\n`;
}

async function main(argv: readonly string[]): Promise<number> {
  const [name, ...args] = argv;
  const out = (text: string) => void process.stdout.write(text);
  const err = (text: string) => void process.stderr.write(text);
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
