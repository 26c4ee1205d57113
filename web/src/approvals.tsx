// Pending approvals of every active run, queued: the first card takes the y / a / n keys.
import { useCallback, useEffect, useRef, useState } from "react";
import { describeError, rpc, type ApprovalRequest } from "./api";
import { Safe } from "./escape";
import { parseDetails } from "./transcript";
import { Command, Diff } from "./toolview";

export interface Pending {
  runId: string;
  sessionId: string;
  id: string;
  request: ApprovalRequest;
}

interface RunStatus {
  id: string;
  sessionId: string;
  done: boolean;
  pendingApprovals: { id: string; request: ApprovalRequest }[];
}

export function usePendingApprovals(enabled: boolean) {
  const [pending, setPending] = useState<Pending[]>([]);
  const busy = useRef(false);
  const refresh = useCallback(async () => {
    if (busy.current) return;
    busy.current = true;
    try {
      const runs = await rpc<RunStatus[]>("run.list");
      const next: Pending[] = [];
      for (const run of runs)
        for (const p of run.pendingApprovals) next.push({ runId: run.id, sessionId: run.sessionId, ...p });
      setPending((prev) =>
        prev.length === next.length && prev.every((p, i) => p.id === next[i].id) ? prev : next,
      );
    } catch {
      /* the next poll retries */
    } finally {
      busy.current = false;
    }
  }, []);
  useEffect(() => {
    if (!enabled) return;
    void refresh();
    const timer = window.setInterval(() => void refresh(), 1000);
    return () => window.clearInterval(timer);
  }, [enabled, refresh]);
  return { pending, refresh };
}

export function Approvals({
  pending,
  refresh,
  onOpen,
}: {
  pending: Pending[];
  refresh: () => Promise<void>;
  onOpen: (session: string) => void;
}) {
  const [error, setError] = useState("");
  const [answered, setAnswered] = useState<Set<string>>(new Set());
  const queue = pending.filter((p) => !answered.has(p.id));

  const answer = useCallback(
    async (p: Pending, allow: boolean, scope: "once" | "session") => {
      setAnswered((s) => new Set(s).add(p.id));
      setError("");
      try {
        await rpc("run.approve", { runId: p.runId, approvalId: p.id, allow, scope });
      } catch (e) {
        setError(describeError(e));
      }
      await refresh();
    },
    [refresh],
  );

  useEffect(() => {
    const first = queue[0];
    if (!first) return;
    const onKey = (e: KeyboardEvent) => {
      const target = e.target as HTMLElement | null;
      if (target && (target.tagName === "TEXTAREA" || target.tagName === "INPUT" || target.tagName === "SELECT")) return;
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      if (e.key === "y") void answer(first, true, "once");
      else if (e.key === "a" && !first.request.dangerous) void answer(first, true, "session");
      else if (e.key === "n") void answer(first, false, "once");
      else return;
      e.preventDefault();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [queue, answer]);

  if (queue.length === 0 && !error) return null;
  return (
    <section className="approvals" aria-label="Pending approvals">
      <h2>
        {queue.length} pending approval{queue.length === 1 ? "" : "s"}
        {queue.length > 0 && <span className="hint"> — keys y / a / n answer the first</span>}
      </h2>
      {error && <p className="error" role="alert">{error}</p>}
      <ol>
        {queue.map((p, i) => (
          <li key={p.id}>
            <ApprovalCard p={p} first={i === 0} onAnswer={answer} onOpen={onOpen} />
          </li>
        ))}
      </ol>
    </section>
  );
}

function ApprovalCard({
  p,
  first,
  onAnswer,
  onOpen,
}: {
  p: Pending;
  first: boolean;
  onAnswer: (p: Pending, allow: boolean, scope: "once" | "session") => void;
  onOpen: (session: string) => void;
}) {
  const r = p.request;
  const bash = r.toolName === "bash" ? parseDetails(r.details) : null;
  const danger = r.dangerous;
  return (
    <article className={`card approval${danger ? " dangerous" : ""}${first ? " first" : ""}`} data-testid="approval">
      <header>
        <span className={`badge ${danger ? "dangerous" : bash?.classification ?? "normal"}`}>
          {danger ? "dangerous" : bash?.classification ?? r.toolName}
        </span>
        <strong>
          <Safe text={r.summary} />
        </strong>
        <button className="link" onClick={() => onOpen(p.sessionId)}>
          session {p.sessionId.slice(0, 8)}
        </button>
      </header>
      {bash?.command !== undefined ? (
        <Command command={bash.command} reasons={bash.reasons} />
      ) : r.toolName === "write" || r.toolName === "edit" ? (
        <Diff text={r.details} />
      ) : (
        <pre className="code">
          <Safe text={r.details} />
        </pre>
      )}
      {bash && bash.reasons.length > 0 && (
        <ul className="reasons">
          {bash.reasons.map((reason, i) => (
            <li key={i}>
              <code>{reason.rule}</code> <Safe text={reason.message} />
            </li>
          ))}
        </ul>
      )}
      <p className="why">
        <Safe text={r.reason} />
      </p>
      <div className="actions">
        <button className="approve" onClick={() => onAnswer(p, true, "once")}>
          Approve{first && <kbd>y</kbd>}
        </button>
        {!danger && (
          <button onClick={() => onAnswer(p, true, "session")}>
            Approve for session{first && <kbd>a</kbd>}
          </button>
        )}
        <button className="deny" onClick={() => onAnswer(p, false, "once")}>
          Deny{first && <kbd>n</kbd>}
        </button>
      </div>
      {danger && <p className="note">Dangerous commands are confirmed one at a time; there is no session approval.</p>}
    </article>
  );
}
