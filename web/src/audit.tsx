// `gg audit` as a table across the workspace's sessions: filter by class and decision, export.
import { useEffect, useMemo, useState } from "react";
import { describeError, rpc } from "./api";
import { Safe } from "./escape";
import { commandOf, type AuditRow } from "./transcript";

function classOf(row: AuditRow): string {
  return row.audit?.classification?.verdict ?? "—";
}
function decisionOf(row: AuditRow): string {
  return row.audit?.decision?.action ?? "—";
}

export function AuditView({ onOpen }: { onOpen: (session: string) => void }) {
  const [rows, setRows] = useState<AuditRow[]>([]);
  const [error, setError] = useState("");
  const [cls, setCls] = useState("all");
  const [decision, setDecision] = useState("all");
  useEffect(() => {
    rpc<AuditRow[]>("audit.list", {}).then(setRows, (e) => setError(describeError(e)));
  }, []);
  const classes = useMemo(() => [...new Set(rows.map(classOf))].sort(), [rows]);
  const decisions = useMemo(() => [...new Set(rows.map(decisionOf))].sort(), [rows]);
  const shown = rows.filter((r) => (cls === "all" || classOf(r) === cls) && (decision === "all" || decisionOf(r) === decision));
  const exportJson = () => {
    const blob = new Blob([JSON.stringify(shown, null, 2)], { type: "application/json" });
    const url = URL.createObjectURL(blob);
    const a = document.createElement("a");
    a.href = url;
    a.download = "gg-audit.json";
    a.click();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  };
  return (
    <section className="audit" aria-label="Audit">
      <div className="row">
        <h2>Audit</h2>
        <label>
          Class{" "}
          <select value={cls} onChange={(e) => setCls(e.target.value)} aria-label="Filter by class">
            <option value="all">all</option>
            {classes.map((c) => (
              <option key={c}>{c}</option>
            ))}
          </select>
        </label>
        <label>
          Decision{" "}
          <select value={decision} onChange={(e) => setDecision(e.target.value)} aria-label="Filter by decision">
            <option value="all">all</option>
            {decisions.map((c) => (
              <option key={c}>{c}</option>
            ))}
          </select>
        </label>
        <button onClick={exportJson}>Export JSON</button>
      </div>
      {error && <p className="error" role="alert">{error}</p>}
      <div className="table-wrap">
        <table data-testid="audit-table">
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col">Session</th>
              <th scope="col">Tool</th>
              <th scope="col">Command / arguments</th>
              <th scope="col">Class</th>
              <th scope="col">Decision</th>
              <th scope="col">By</th>
              <th scope="col">Sandbox</th>
              <th scope="col">Status</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((r, i) => (
              <tr key={`${r.sessionId}-${r.callId}-${i}`}>
                <td>{new Date(r.timestamp).toLocaleString()}</td>
                <td>
                  {r.sessionId && (
                    <button className="link" onClick={() => onOpen(r.sessionId!)}>
                      <Safe text={r.sessionName || r.sessionId.slice(0, 8)} />
                    </button>
                  )}
                </td>
                <td>{r.tool}</td>
                <td className="cmd">
                  <code>
                    <Safe text={commandOf(r.arguments) ?? r.arguments} />
                  </code>
                </td>
                <td>
                  <span className={`badge ${classOf(r)}`}>{classOf(r)}</span>
                </td>
                <td className={`decision ${decisionOf(r)}`}>{decisionOf(r)}</td>
                <td>{r.audit?.decision?.decidedBy ?? ""}</td>
                <td>{r.audit?.sandbox?.level ?? ""}</td>
                <td>{r.status}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {rows.length === 0 && !error && <p className="empty">No tool calls recorded yet.</p>}
    </section>
  );
}
