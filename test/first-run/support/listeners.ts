// Which TCP addresses a process group listens on, read from /proc (Linux): every socket inode
// the group's processes hold, matched against the kernel's LISTEN table. Used to prove that the
// quickstart in dev mode binds loopback only.

import { readdirSync, readFileSync, readlinkSync } from "node:fs";

export interface Listener {
  readonly address: string;
  readonly port: number;
  readonly loopback: boolean;
}

function groupPids(pgid: number): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // Field 5 of /proc/<pid>/stat is the process group; the command name (field 2) may hold spaces.
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[2]) === pgid) pids.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}

function socketInodes(pid: number): Set<string> {
  const inodes = new Set<string>();
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m) inodes.add(m[1]!);
      } catch {
        // closed meanwhile
      }
    }
  } catch {
    // exited meanwhile
  }
  return inodes;
}

function decodeAddress(hex: string): { address: string; loopback: boolean } {
  if (hex.length === 8) {
    const bytes = hex.match(/../g)!.map((b) => parseInt(b, 16)).reverse();
    return { address: bytes.join("."), loopback: bytes[0] === 127 };
  }
  const loopback = hex === "00000000000000000000000001000000";
  return { address: loopback ? "::1" : hex, loopback };
}

/** Every TCP socket in LISTEN state held by a process of the group `pgid`. */
export function listenersOfGroup(pgid: number): Listener[] {
  const inodes = new Set<string>();
  for (const pid of groupPids(pgid)) for (const inode of socketInodes(pid)) inodes.add(inode);
  const listeners: Listener[] = [];
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    for (const line of readFileSync(table, "utf8").trim().split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/);
      const [local, , state] = [cols[1]!, cols[2]!, cols[3]!];
      if (state !== "0A" || !inodes.has(cols[9]!)) continue;
      const [addrHex, portHex] = local.split(":") as [string, string];
      listeners.push({ ...decodeAddress(addrHex), port: parseInt(portHex, 16) });
    }
  }
  return listeners;
}
