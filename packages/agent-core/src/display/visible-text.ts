// Text from agents' streams as a viewer should see it. A bidirectional embedding, override or
// isolate makes a line display in another order than it is stored and run (Trojan Source): in
// the web UI a script's code, a reply or a payload could show one thing and hold another. Each
// such character is shown as the escape the CLI prints for it (`\u202e`), so what is shown is
// what is there. (The CLI's terminal-safe form escapes these and every control character.)

/** The bidirectional embeddings and overrides (U+202A–U+202E) and isolates (U+2066–U+2069). */
const BIDI_CONTROLS = /[\u202a-\u202e\u2066-\u2069]/g;

/** `text` with every bidirectional control character written as `\uXXXX`. */
export function revealBidiControls(text: string): string {
  return text.replace(BIDI_CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
