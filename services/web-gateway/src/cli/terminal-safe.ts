// What the CLI prints comes from agents' streams: model replies, script results, titles, other
// writers' messages. Printed as they are, an escape sequence in any of them reached the user's
// terminal, where it can recolour, rewrite or hide lines, set the window title or (in some
// terminals) write to the clipboard; bidirectional overrides reorder what a line seems to say.
// Each such character is shown as a `\uXXXX` escape instead: readable in text, and in JSON
// output (where JSON.stringify leaves DEL, the C1 controls and U+2028/9 raw) a valid escape of
// the same character, so `agents state | jq` still parses.

// C0 controls but \t and \n, DEL, the C1 controls (CSI, OSC, … as single code points), the line
// and paragraph separators, and the bidirectional embeddings, overrides and isolates.
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g; // eslint-disable-line no-control-regex -- matching them is the point

/** `text` with every control, separator and bidirectional-override character written as `\uXXXX`. */
export function terminalSafe(text: string): string {
  return text.replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
