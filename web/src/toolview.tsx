// How a tool call is shown: the chain's view of it (classification, reasons with their spans in
// the command, decision and who made it, sandbox level, exit status, duration, output).
import { useEffect, useState, type ReactNode } from "react";
import { describeError, rpc } from "./api";
import { Safe } from "./escape";
import { hasSavedLog, type Reason, type ToolItem } from "./transcript";

/** The command with each reason's byte span highlighted (spans are UTF-8 byte offsets). */
export function Command({ command, reasons }: { command: string; reasons: Reason[] }) {
  const spans = reasons
    .filter((r) => r.span && r.span[1] > r.span[0])
    .map((r) => ({ start: r.span![0], end: r.span![1], rule: r.rule }))
    .sort((a, b) => a.start - b.start);
  if (spans.length === 0) {
    return (
      <pre className="code command">
        <Safe text={command} />
      </pre>
    );
  }
  const bytes = new TextEncoder().encode(command);
  const decode = (a: number, b: number) => new TextDecoder().decode(bytes.slice(a, b));
  const parts: ReactNode[] = [];
  let at = 0;
  for (const s of spans) {
    const start = Math.max(s.start, at);
    if (start >= s.end) continue;
    if (start > at) parts.push(<Safe key={`t${at}`} text={decode(at, start)} />);
    parts.push(
      <mark key={`m${start}`} title={s.rule}>
        <Safe text={decode(start, s.end)} />
      </mark>,
    );
    at = s.end;
  }
  if (at < bytes.length) parts.push(<Safe key={`t${at}`} text={decode(at, bytes.length)} />);
  return <pre className="code command">{parts}</pre>;
}

/** A unified diff, added and removed lines coloured. */
export function Diff({ text }: { text: string }) {
  return (
    <pre className="code diff">
      {text.split("\n").map((line, i) => {
        const cls = line.startsWith("+++") || line.startsWith("---") ? "hdr" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : line.startsWith("@@") ? "hunk" : "";
        return (
          <span key={i} className={cls}>
            <Safe text={line} />
            {"\n"}
          </span>
        );
      })}
    </pre>
  );
}

/** How a bash command ended, from the last line the bash tool appends (none means exit 0). */
export function exitStatus(t: { name: string; output?: string; isError?: boolean }): string | undefined {
  if (t.name !== "bash" || t.output === undefined) return undefined;
  const last = t.output.trimEnd().split("\n").pop() ?? "";
  const code = /^exit code (-?\d+)$/.exec(last);
  if (code) return `exit ${code[1]}`;
  const signal = /^killed by signal (\w+)$/.exec(last);
  if (signal) return `killed (signal ${signal[1]})`;
  if (/^command timed out after /.test(last)) return "timed out";
  if (last === "command canceled") return "canceled";
  return t.isError ? undefined : "exit 0";
}

function duration(t: ToolItem): string | undefined {
  if (t.startedAt === undefined || t.finishedAt === undefined) return undefined;
  const ms = t.finishedAt - t.startedAt;
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

const PREVIEW_LINES = 6;

/** A chunk of `tool.log`. */
interface LogChunk {
  name: string;
  size: number;
  next: number;
  eof: boolean;
  text: string;
}

function bytes(n: number): string {
  return n < 1024 ? `${n} B` : n < 1 << 20 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / (1 << 20)).toFixed(1)} MiB`;
}

/**
 * The whole output of a truncated bash call, read from ggd page by page (1 MiB each) on request.
 */
function FullLog({ sessionId, callId, onClose }: { sessionId: string; callId: string; onClose: () => void }) {
  const [log, setLog] = useState<LogChunk | null>(null);
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const load = async (offset: number) => {
    setBusy(true);
    setError("");
    try {
      const chunk = await rpc<LogChunk>("tool.log", { sessionId, callId, offset });
      setLog((prev) => (prev && offset > 0 ? { ...chunk, text: prev.text + chunk.text } : chunk));
    } catch (e) {
      setError(describeError(e));
    } finally {
      setBusy(false);
    }
  };
  useEffect(() => {
    void load(0);
    // The first page, once per call shown.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [sessionId, callId]);
  const download = () => {
    if (!log) return;
    const url = URL.createObjectURL(new Blob([log.text], { type: "text/plain" }));
    const a = document.createElement("a");
    a.href = url;
    a.download = log.name;
    a.click();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  };
  return (
    <div className="full-log">
      <div className="row">
        <strong>Full log</strong>
        {log && (
          <span className="meta">
            {log.name} · {bytes(log.size)}
            {!log.eof && ` · ${bytes(log.next)} shown`}
          </span>
        )}
        {log && !log.eof && (
          <button className="link" disabled={busy} onClick={() => void load(log.next)}>
            Load more
          </button>
        )}
        {log?.eof && (
          <button className="link" onClick={download}>
            Download
          </button>
        )}
        <button className="link" onClick={onClose}>
          Hide full log
        </button>
      </div>
      {busy && !log && <p className="meta">Loading…</p>}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {log && (
        <pre className="code log" data-testid="full-log">
          <Safe text={log.text} />
        </pre>
      )}
    </div>
  );
}

/** An image a tool saved (a screenshot, a generated image), read through ggd's media.read. */
function ToolImage({ path }: { path: string }) {
  const [image, setImage] = useState<{ src: string } | { error: string } | null>(null);
  useEffect(() => {
    rpc<{ mimeType: string; data: string }>("media.read", { path }).then(
      (r) => setImage({ src: `data:${r.mimeType};base64,${r.data}` }),
      (e) => setImage({ error: describeError(e) }),
    );
  }, [path]);
  return (
    <figure className="media-image" data-testid="tool-image">
      {image && "src" in image && <img src={image.src} alt={`image saved by the tool: ${path}`} />}
      <figcaption className="meta">
        <Safe text={path} />
        {image && "error" in image && (
          <>
            {" · "}
            <Safe text={image.error} />
          </>
        )}
      </figcaption>
    </figure>
  );
}

/** Which calls have their full log open in a session view, and how to open or close one. */
export interface OpenLogs {
  open: Set<string>;
  toggle: (callId: string) => void;
}

export function ToolCard({
  t,
  sessionId,
  logOpen,
  toggleLog,
}: {
  t: ToolItem;
  sessionId: string;
  logOpen: boolean;
  toggleLog: (callId: string) => void;
}) {
  const [open, setOpen] = useState(false);
  const saved = hasSavedLog(t.output);
  const cls = t.dangerous ? "dangerous" : t.classification;
  const output = t.output ?? "";
  const lines = output.split("\n");
  const long = lines.length > PREVIEW_LINES;
  const exit = exitStatus(t);
  const took = duration(t);
  const decidedBy = t.decision?.decidedBy === "user" ? "you" : t.decision?.decidedBy;
  return (
    <article className={`card tool${t.isError ? " failed" : ""}`} data-testid="tool-call">
      <header>
        {cls && <span className={`badge ${cls}`}>{cls}</span>}
        <span className="tool-name">{t.name}</span>
        {t.decision && (
          <span className={`decision ${t.decision.action}`}>
            {t.decision.action === "deny" ? "denied" : "allowed"} by {decidedBy}
            {t.decision.mode ? ` (${t.decision.mode})` : ""}
          </span>
        )}
        {t.pendingApproval && <span className="decision pending">waiting for approval</span>}
        {t.sandbox && <span className="meta">sandbox: {t.sandbox}</span>}
        {t.status && <span className="meta">status: {t.status}</span>}
        {exit !== undefined && <span className="meta">{exit}</span>}
        {took && <span className="meta">{took}</span>}
      </header>
      {t.command !== undefined ? (
        <Command command={t.command} reasons={t.reasons} />
      ) : (
        <p className="summary">
          <Safe text={t.summary} />
        </p>
      )}
      {t.command === undefined && t.details && (t.name === "write" || t.name === "edit") && <Diff text={t.details} />}
      {t.reasons.length > 0 && (
        <ul className="reasons">
          {t.reasons.map((r, i) => (
            <li key={i}>
              <code>{r.rule}</code> <Safe text={r.message} />
            </li>
          ))}
        </ul>
      )}
      {t.output !== undefined && (
        <div className="output">
          <pre className={`code${t.isError ? " error" : ""}`} data-testid="tool-output">
            <Safe text={open || !long ? output : lines.slice(0, PREVIEW_LINES).join("\n")} />
          </pre>
          {long && (
            <button className="link" onClick={() => setOpen(!open)} aria-expanded={open}>
              {open ? "Collapse output" : `Show all ${lines.length} lines`}
            </button>
          )}
          {saved && !logOpen && (
            <button className="link" onClick={() => toggleLog(t.callId)}>
              Full log
            </button>
          )}
          {saved && logOpen && <FullLog sessionId={sessionId} callId={t.callId} onClose={() => toggleLog(t.callId)} />}
        </div>
      )}
      {t.images?.map((path) => <ToolImage key={path} path={path} />)}
    </article>
  );
}
