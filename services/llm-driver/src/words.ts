// Word-sized pieces of a text (a word with its trailing whitespace); joining them gives the
// text back. Used to stream the offline model's reply token by token.
export function splitWords(text: string): string[] {
  return text.match(/\S+\s*|\s+/g) ?? [];
}
