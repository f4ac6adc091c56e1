// `pnpm agents audit PATH... | --prefix P [--json]`: each stream's invariants, checked by the
// gateway with the core's audit (GET /v1/agents/{path}/audit). Prints every violation with the
// offsets involved and every note; exits 1 when any stream has a violation.

import { pathUnder } from "@agentrt/contract";
import type { AuditResult } from "../../api/agent-core-port.ts";
import { callGateway, clientEnv, encPath, listAllAgents, parseArgs } from "../gateway-client.ts";

type Out = (text: string) => void;

const at = (offsets: readonly number[]) => offsets.map((o) => `@${o}`).join(", ");

export function formatAudit(report: AuditResult): string {
  const head = `${report.streamPath}: ${report.violations.length === 0 ? "ok" : `${report.violations.length} violation(s)`} (${report.events} events @${report.firstOffset}..@${report.lastOffset}, ${report.requests} requests, ${report.scripts} scripts, ${report.prefixPairsChecked} cache-prefix pairs checked)`;
  const lines = [
    head,
    ...report.violations.map((v) => `  ✗ ${v.rule}: ${v.message} [${at(v.offsets)}]`),
    ...report.notes.map((n) => `  · ${n.rule}: ${n.message} [${at(n.offsets)}]`),
  ];
  return `${lines.join("\n")}\n`;
}

export async function auditCommand(args: readonly string[], out: Out): Promise<number> {
  const { positional, flags } = parseArgs(args, ["prefix"], ["json"]);
  const env = clientEnv();
  const paths = [...positional];
  if (typeof flags.prefix === "string") {
    // The listing matches a prefix by text, as the UI's search wants (`/agents/a` finds
    // `/agents/ab`); an audit of a prefix means the streams under it, segment by segment, as
    // keys' scopes do.
    const prefix = flags.prefix;
    for await (const agent of listAllAgents(env, prefix)) if (pathUnder(agent.streamPath, prefix)) paths.push(agent.streamPath);
    if (paths.length === 0) throw new Error(`no agent under ${prefix} that this key may read (a prefix covers whole path segments: /agents/a covers /agents/a/b, not /agents/ab)`);
  }
  if (paths.length === 0) throw new Error("usage: agents audit PATH... | --prefix P [--json]");
  let failing = 0;
  for (const path of paths) {
    const report = await callGateway<AuditResult>(env, "GET", `/v1/agents/${encPath(path)}/audit`);
    if (report.violations.length > 0) failing += 1;
    out(flags.json === true ? `${JSON.stringify(report)}\n` : formatAudit(report));
  }
  if (flags.json !== true && paths.length > 1) out(`${paths.length} streams audited, ${failing} with violations\n`);
  return failing === 0 ? 0 : 1;
}
