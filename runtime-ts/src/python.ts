// How the Python runtime writes a few values in its messages, so that the texts match.

/** A string as Python's repr() writes it (enough for names and titles in messages). */
export function pyRepr(text: string): string {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  let body = text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/\r/g, "\\r").replace(/\t/g, "\\t");
  if (quote === "'") body = body.replace(/'/g, "\\'");
  return quote + body + quote;
}
