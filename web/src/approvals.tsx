// Pending approvals of every active run (several sessions may wait at once), queued oldest run
// first. The y / a / n keys answer the card that has the keyboard focus (the card itself or one
// of its buttons), otherwise the first card of the queue.
import { useCallback, useEffect, useRef, useState } from "react";
import { describeError, rpc, type ApprovalRequest } from "./api";
import { Safe } from "./escape";
import { parseDetails } from "./transcript";
import { Command, Diff } from "./toolview";

export interface Pending {
  runId: string;
  sessionId: string;
  /** The prompt of the run that asks: which of several runs this is. */
  prompt?: string;
  id: string;
  request: ApprovalRequest;
}

interface RunStatus {
  id: string;
  sessionId: string;
  done: boolean;
  prompt?: string;
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
        for (const p of run.pendingApprovals) next.push({ runId: run.id, sessionId: run.sessionId, prompt: run.prompt, ...p });
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
        // Not answered after all: show the card again (the refresh drops it if it is gone).
        setAnswered((s) => {
          const next = new Set(s);
          next.delete(p.id);
          return next;
        });
      }
      await refresh();
    },
    [refresh],
  );

  // The card the keys act on: the focused one, else the first.
  const [focused, setFocused] = useState<string | null>(null);
  const target = queue.find((p) => p.id === focused) ?? queue[0];

  useEffect(() => {
    if (!target) return;
    const onKey = (e: KeyboardEvent) => {
      const el = e.target as HTMLElement | null;
      if (el && (el.tagName === "TEXTAREA" || el.tagName === "INPUT" || el.tagName === "SELECT")) return;
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      // A key typed inside a card answers that card, whatever the focus state says.
      const inCard = el?.closest?.("[data-approval-id]")?.getAttribute("data-approval-id");
      const p = queue.find((q) => q.id === inCard) ?? target;
      if (e.key === "y") void answer(p, true, "once");
      else if (e.key === "a" && !p.request.dangerous) void answer(p, true, "session");
      else if (e.key === "n") void answer(p, false, "once");
      else return;
      e.preventDefault();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [queue, target, answer]);

  if (queue.length === 0 && !error) return null;
  return (
    <section className="approvals" aria-label="Pending approvals">
      <h2>
        {queue.length} pending approval{queue.length === 1 ? "" : "s"}
        {queue.length > 0 && (
          <span className="hint">
            {" "}
            — keys y / a / n answer the {queue.length > 1 ? "focused card, else the first" : "card"}
          </span>
        )}
      </h2>
      {error && <p className="error" role="alert">{error}</p>}
      <ol>
        {queue.map((p, i) => (
          <li
            key={p.id}
            onFocus={() => setFocused(p.id)}
            onBlur={(e) => {
              if (!e.currentTarget.contains(e.relatedTarget as Node | null)) setFocused((f) => (f === p.id ? null : f));
            }}
          >
            <ApprovalCard p={p} position={i + 1} count={queue.length} keys={p === target} onAnswer={answer} onOpen={onOpen} />
          </li>
        ))}
      </ol>
    </section>
  );
}

function ApprovalCard({
  p,
  position,
  count,
  keys,
  onAnswer,
  onOpen,
}: {
  p: Pending;
  position: number;
  count: number;
  /** Whether the y / a / n keys act on this card now. */
  keys: boolean;
  onAnswer: (p: Pending, allow: boolean, scope: "once" | "session") => void;
  onOpen: (session: string) => void;
}) {
  const r = p.request;
  const bash = r.toolName === "bash" ? parseDetails(r.details) : null;
  const danger = r.dangerous;
  return (
    <article
      className={`card approval${danger ? " dangerous" : ""}${keys ? " first" : ""}`}
      data-testid="approval"
      data-approval-id={p.id}
      tabIndex={0}
      aria-label={`Approval ${position} of ${count}: ${r.toolName}${danger ? ", dangerous" : ""}`}
    >
      <header>
        <span className={`badge ${danger ? "dangerous" : bash?.classification ?? "normal"}`}>
          {danger ? "dangerous" : bash?.classification ?? "normal"}
        </span>
        <strong>
          <Safe text={r.summary} />
        </strong>
        <button className="link" onClick={() => onOpen(p.sessionId)}>
          session {p.sessionId.slice(0, 8)}
        </button>
        {p.prompt !== undefined && (
          <span className="meta run-prompt">
            run “<Safe text={p.prompt.length > 60 ? `${p.prompt.slice(0, 60)}…` : p.prompt} />”
          </span>
        )}
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
          Approve{keys && <kbd>y</kbd>}
        </button>
        {!danger && (
          <button onClick={() => onAnswer(p, true, "session")}>
            Approve for session{keys && <kbd>a</kbd>}
          </button>
        )}
        <button className="deny" onClick={() => onAnswer(p, false, "once")}>
          Deny{keys && <kbd>n</kbd>}
        </button>
      </div>
      {danger && <p className="note">Dangerous commands are confirmed one at a time; there is no session approval.</p>}
    </article>
  );
}
