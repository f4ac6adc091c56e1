// What the CLI prints comes from agents' streams: model replies, script results, titles, other
// writers' messages. Printed as they are, an escape sequence in any of them reached the user's
// terminal, where it can recolour, rewrite or hide lines, set the window title or (in some
// terminals) write to the clipboard. Every control character but newline and tab is shown as
// an escape instead.

// C0 controls but \t and \n, DEL, and the C1 controls (CSI, OSC, … as single code points).
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g; // eslint-disable-line no-control-regex -- matching them is the point

/** `text` with every control character but newline and tab written as `\xNN`. */
export function terminalSafe(text: string): string {
  return text.replace(CONTROL, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}
