// Model content may carry terminal control characters or Unicode bidi overrides that make text
// read differently from what it is (a command that looks harmless but is not). They are shown
// escaped and marked, as the terminal client does; tabs and newlines stay as they are.
import type { ReactNode } from "react";

// C0 controls except \t \n, DEL, C1 controls, bidi embeddings/overrides/isolates and marks.
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

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
      <span key={at} className="esc" title="control or bidi character, shown escaped">
        {escapeCode(match[0])}
      </span>,
    );
    last = at + match[0].length;
  }
  if (last === 0) return text;
  if (last < text.length) parts.push(text.slice(last));
  return <>{parts}</>;
}
