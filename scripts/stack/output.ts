// The supervisor's own lines and its children's prefixed log lines on stdout.

export function log(message: string): void {
  process.stdout.write(`\x1b[36m[stack]\x1b[0m ${message}\n`);
}

/** Writes every complete line of `chunk` with the child's name in front. */
export function prefixLines(name: string): (chunk: Buffer) => void {
  const prefix = `\x1b[35m${name.padEnd(16)}\x1b[0m| `;
  let partial = "";
  return (chunk) => {
    const lines = (partial + chunk.toString()).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) if (line.trim()) process.stdout.write(prefix + line + "\n");
  };
}
