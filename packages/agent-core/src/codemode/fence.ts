// A markdown fence that the fenced text cannot close early: one backtick longer than the
// longest backtick run inside it (three at least).

export function fenceFor(text: string): string {
  let longest = 0;
  for (const run of text.match(/`+/g) ?? []) longest = Math.max(longest, run.length);
  return "`".repeat(Math.max(3, longest + 1));
}

export function fenced(text: string, language = ""): string {
  const fence = fenceFor(text);
  return `${fence}${language}\n${text}\n${fence}`;
}
