// A small Markdown renderer that builds React elements (never HTML strings), so model output
// cannot inject markup: fenced code, headings, lists, quotes, paragraphs, and inline code,
// bold, italics and links (http/https only, opened without a referrer).
import type { ReactNode } from "react";
import { Safe } from "./escape";

function inline(text: string, key: string): ReactNode[] {
  const out: ReactNode[] = [];
  const pattern = /(`+)([^`]+?)\1|\*\*([^*]+)\*\*|\*([^*\s][^*]*)\*|\[([^\]]+)\]\((https?:\/\/[^\s)]+)\)/g;
  let last = 0;
  let n = 0;
  for (const m of text.matchAll(pattern)) {
    const at = m.index ?? 0;
    if (at > last) out.push(<Safe key={`${key}t${n++}`} text={text.slice(last, at)} />);
    const k = `${key}i${n++}`;
    if (m[2] !== undefined) out.push(<code key={k}><Safe text={m[2]} /></code>);
    else if (m[3] !== undefined) out.push(<strong key={k}><Safe text={m[3]} /></strong>);
    else if (m[4] !== undefined) out.push(<em key={k}><Safe text={m[4]} /></em>);
    else if (m[5] !== undefined)
      out.push(
        <a key={k} href={m[6]} target="_blank" rel="noreferrer noopener">
          <Safe text={m[5]} />
        </a>,
      );
    last = at + m[0].length;
  }
  if (last < text.length) out.push(<Safe key={`${key}t${n++}`} text={text.slice(last)} />);
  return out;
}

export function Markdown({ text }: { text: string }): ReactNode {
  const lines = text.split("\n");
  const blocks: ReactNode[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const key = `b${i}`;
    const fence = /^\s*(```|~~~)\s*([\w+-]*)/.exec(line);
    if (fence) {
      const body: string[] = [];
      i++;
      while (i < lines.length && !lines[i].trimStart().startsWith(fence[1])) body.push(lines[i++]);
      i++;
      blocks.push(
        <pre key={key} className="code" data-lang={fence[2] || undefined}>
          <code>
            <Safe text={body.join("\n")} />
          </code>
        </pre>,
      );
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      const level = Math.min(heading[1].length + 2, 6);
      const Tag = `h${level}` as "h3";
      blocks.push(<Tag key={key}>{inline(heading[2], key)}</Tag>);
      i++;
      continue;
    }
    if (/^\s*([-*+]|\d+[.)])\s+/.test(line)) {
      const ordered = /^\s*\d/.test(line);
      const items: ReactNode[] = [];
      while (i < lines.length && /^\s*([-*+]|\d+[.)])\s+/.test(lines[i])) {
        items.push(<li key={i}>{inline(lines[i].replace(/^\s*([-*+]|\d+[.)])\s+/, ""), `l${i}`)}</li>);
        i++;
      }
      blocks.push(ordered ? <ol key={key}>{items}</ol> : <ul key={key}>{items}</ul>);
      continue;
    }
    if (line.startsWith(">")) {
      const quote: string[] = [];
      while (i < lines.length && lines[i].startsWith(">")) quote.push(lines[i++].replace(/^>\s?/, ""));
      blocks.push(<blockquote key={key}>{inline(quote.join("\n"), key)}</blockquote>);
      continue;
    }
    if (line.trim() === "") {
      i++;
      continue;
    }
    // The first line always belongs to the paragraph, so the loop always advances.
    const para: string[] = [lines[i++]];
    while (
      i < lines.length &&
      lines[i].trim() !== "" &&
      !/^\s*(```|~~~|#{1,6}\s|>|[-*+]\s|\d+[.)]\s)/.test(lines[i])
    )
      para.push(lines[i++]);
    blocks.push(<p key={key}>{inline(para.join("\n"), key)}</p>);
  }
  return <div className="md">{blocks}</div>;
}
