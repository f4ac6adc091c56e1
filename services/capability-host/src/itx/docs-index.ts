// itx.docs.search: a small in-memory index over the itx declarations, the providers'
// declarations and worked examples. Each declaration block (a doc comment plus the
// declaration it documents) is one document; scoring is term overlap, which is enough for
// "several related words" queries over a few hundred lines.

export interface DocHit {
  readonly title: string;
  readonly snippet: string;
}

interface Doc extends DocHit {
  readonly terms: ReadonlySet<string>;
}

export const EXAMPLES: readonly DocHit[] = [
  { title: "example: send a chat message", snippet: 'await itx.chat.sendMessage("Working on it…");' },
  { title: "example: update your summary", snippet: 'await itx.agent.append({ type: "agent/summary-updated", payload: { title: "Triage", activity: "Reading PRs" } });' },
  { title: "example: remember a value (kv)", snippet: 'await itx.kv.set("last-run", { at: Date.now() });\nconst last = await itx.kv.get("last-run");' },
  { title: "example: workspace files", snippet: 'await itx.files.write("notes/plan.md", "# Plan");\nconst text = await itx.files.get("notes/plan.md").text();' },
  { title: "example: delegate to a sub-agent", snippet: 'const child = itx.agents.get("researcher");\nawait child.create();\nawait child.message("Find the three most-cited papers on X.");' },
  { title: "example: read another stream", snippet: 'const events = await itx.streams.get(itx.agent.path).read({ fromOffset: 1, limit: 20 });' },
  { title: "example: reuse an earlier result", snippet: "const previous = results[0];\nif (previous?.status === \"succeeded\" && \"data\" in previous) return previous.data;" },
];

function termsOf(text: string): Set<string> {
  return new Set(text.toLowerCase().split(/[^a-z0-9]+/).filter((t) => t.length > 1));
}

function splitDeclarations(source: string, origin: string): DocHit[] {
  const hits: DocHit[] = [];
  const blocks = source.split(/\n(?=(?:\/\*\*|interface |declare |type ))/);
  for (const block of blocks) {
    const trimmed = block.trim();
    if (trimmed.length === 0 || trimmed.startsWith("//")) continue;
    const name = /(?:interface|type|declare const)\s+([A-Za-z_$][\w$]*)/.exec(trimmed)?.[1] ?? "declarations";
    hits.push({ title: `${origin}: ${name}`, snippet: trimmed.length > 1500 ? `${trimmed.slice(0, 1500)}…` : trimmed });
  }
  return hits;
}

export class DocsIndex {
  private docs: Doc[] = [];

  constructor(private readonly itxDeclarations: string) {
    this.rebuild(new Map());
  }

  rebuild(providerDeclarations: ReadonlyMap<string, string>): void {
    const hits = [
      ...splitDeclarations(this.itxDeclarations, "itx.d.ts"),
      ...[...providerDeclarations].flatMap(([ns, dts]) => splitDeclarations(dts, `provider ${ns}`)),
      ...EXAMPLES,
    ];
    this.docs = hits.map((h) => ({ ...h, terms: termsOf(`${h.title} ${h.snippet}`) }));
  }

  search(query: string, limit = 5): DocHit[] {
    const wanted = [...termsOf(query)];
    return this.docs
      .map((doc) => ({ doc, score: wanted.filter((t) => doc.terms.has(t)).length }))
      .filter((s) => s.score > 0)
      .sort((a, b) => b.score - a.score)
      .slice(0, limit)
      .map(({ doc }) => ({ title: doc.title, snippet: doc.snippet }));
  }
}
