// Model content may carry terminal control characters, Unicode bidi overrides or invisible
// characters that make text read differently from what it is (a command that looks harmless but
// is not, a diff hiding an order). They are shown escaped and marked, as the terminal client does;
// tabs and newlines stay as they are.
import type { ReactNode } from "react";

// C0 controls except \t \n, DEL, C1 controls, and every invisible character: Unicode's
// Default_Ignorable_Code_Point (bidi marks, embeddings, overrides and isolates, zero-width spaces
// and joiners, soft hyphen, variation selectors, the byte-order mark, Hangul fillers …), which
// includes the tag characters U+E0000–E007F that can spell out a whole hidden order. The same set
// as the terminal's (the termsafe crate); the `u` flag matches the astral ones as one character.
const UNSAFE =
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\u{1bca0}-\u{1bca3}\u{1d173}-\u{1d17a}\u{e0000}-\u{e0fff}]/gu;

export function escapeCode(ch: string): string {
  const code = ch.codePointAt(0) ?? 0;
  if (code < 0x100) return `\\x${code.toString(16).padStart(2, "0")}`;
  return `\\u{${code.toString(16)}}`;
}

/** Plain text with unsafe characters replaced by their escapes. */
export function escapeText(text: string): string {
  return text.replace(UNSAFE, escapeCode);
}

/** Text as React nodes, the escapes marked so they stand out. */
export function Safe({ text }: { text: string }): ReactNode {
  const parts: ReactNode[] = [];
  let last = 0;
  for (const match of text.matchAll(UNSAFE)) {
    const at = match.index ?? 0;
    if (at > last) parts.push(text.slice(last, at));
    parts.push(
      <span key={at} className="esc" title="control, bidi or invisible character, shown escaped">
        {escapeCode(match[0])}
      </span>,
    );
    last = at + match[0].length;
  }
  if (last === 0) return text;
  if (last < text.length) parts.push(text.slice(last));
  return <>{parts}</>;
}
