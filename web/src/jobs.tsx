// Scheduled jobs: list, run log, pause / resume / remove, add with cron, at or in.
import { useCallback, useEffect, useState } from "react";
import { describeError, rpc } from "./api";
import { Safe } from "./escape";

interface Job {
  id: string;
  name: string;
  kind: string;
  schedule: string;
  prompt: string;
  timezone: string;
  enabled: boolean;
  auto_approve: boolean;
  sandbox: boolean;
  next_run?: string | null;
  last_run?: string | null;
  run_count: number;
}

interface JobRun {
  id: string;
  job_id: string;
  started_at: string;
  finished_at?: string | null;
  status: string;
  summary: string;
}

export function JobsView() {
  const [jobs, setJobs] = useState<Job[]>([]);
  const [runs, setRuns] = useState<JobRun[]>([]);
  const [error, setError] = useState("");
  const [open, setOpen] = useState<string | null>(null);
  const refresh = useCallback(async () => {
    try {
      const r = await rpc<{ jobs: Job[]; runs: JobRun[] }>("job.list");
      setJobs(r.jobs);
      setRuns(r.runs);
    } catch (e) {
      setError(describeError(e));
    }
  }, []);
  useEffect(() => {
    void refresh();
    const timer = window.setInterval(() => void refresh(), 2000);
    return () => window.clearInterval(timer);
  }, [refresh]);

  const act = async (method: string, id: string) => {
    setError("");
    try {
      await rpc(method, { id });
      await refresh();
    } catch (e) {
      setError(describeError(e));
    }
  };

  return (
    <section className="jobs" aria-label="Jobs">
      <h2>Scheduled jobs</h2>
      <AddJob onAdded={refresh} />
      {error && <p className="error" role="alert">{error}</p>}
      {jobs.length === 0 && <p className="empty">No jobs.</p>}
      <ul className="job-list">
        {jobs.map((j) => {
          const log = runs.filter((r) => r.job_id === j.id).reverse();
          return (
            <li key={j.id} className="card" data-testid="job">
              <header>
                <strong>
                  <Safe text={j.name} />
                </strong>
                <span className="meta">
                  {j.kind} {j.schedule} ({j.timezone})
                </span>
                <span className={`badge ${j.enabled ? "read-only" : "normal"}`}>
                  {j.enabled ? "active" : j.kind === "once" && j.run_count > 0 ? "done" : "paused"}
                </span>
              </header>
              <p className="meta">
                <Safe text={j.prompt} />
              </p>
              <p className="meta">
                next: {j.next_run ? new Date(j.next_run).toLocaleString() : "—"} · runs: {j.run_count}
                {j.auto_approve ? " · allow-all" : ""}
                {j.sandbox ? " · sandbox" : " · no sandbox"}
              </p>
              <div className="actions">
                {j.enabled ? (
                  <button onClick={() => void act("job.pause", j.id)}>Pause</button>
                ) : (
                  <button onClick={() => void act("job.resume", j.id)}>Resume</button>
                )}
                <button className="deny" onClick={() => void act("job.remove", j.id)}>
                  Remove
                </button>
                <button onClick={() => setOpen(open === j.id ? null : j.id)} aria-expanded={open === j.id}>
                  Log ({log.length})
                </button>
              </div>
              {(open === j.id || log.length > 0) && (
                <table className="job-runs" data-testid="job-runs">
                  <tbody>
                    {(open === j.id ? log : log.slice(0, 3)).map((r) => (
                      <tr key={r.id}>
                        <td>{new Date(r.started_at).toLocaleString()}</td>
                        <td className={`status ${r.status}`}>{r.status}</td>
                        <td>
                          <Safe text={r.summary} />
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
            </li>
          );
        })}
      </ul>
    </section>
  );
}

function AddJob({ onAdded }: { onAdded: () => Promise<void> }) {
  const [name, setName] = useState("");
  const [prompt, setPrompt] = useState("");
  const [when, setWhen] = useState<"cron" | "at" | "in">("in");
  const [value, setValue] = useState("");
  const [allowAll, setAllowAll] = useState(false);
  const [noSandbox, setNoSandbox] = useState(false);
  const [error, setError] = useState("");
  const submit = async () => {
    setError("");
    try {
      await rpc("job.add", { name, prompt, [when]: value, allowAll, noSandbox });
      setName("");
      setPrompt("");
      setValue("");
      await onAdded();
    } catch (e) {
      setError(describeError(e));
    }
  };
  return (
    <form
      className="add-job card"
      onSubmit={(e) => {
        e.preventDefault();
        void submit();
      }}
    >
      <label>
        Name <input value={name} onChange={(e) => setName(e.target.value)} required />
      </label>
      <label>
        Prompt <input value={prompt} onChange={(e) => setPrompt(e.target.value)} required />
      </label>
      <label>
        When{" "}
        <select value={when} onChange={(e) => setWhen(e.target.value as "cron" | "at" | "in")}>
          <option value="in">in (90s, 10m, 2h)</option>
          <option value="at">at (YYYY-MM-DD HH:MM)</option>
          <option value="cron">cron (5 fields, @daily)</option>
        </select>
      </label>
      <label>
        Schedule <input value={value} onChange={(e) => setValue(e.target.value)} required />
      </label>
      <label>
        <input type="checkbox" checked={allowAll} onChange={(e) => setAllowAll(e.target.checked)} /> allow normal
        commands (dangerous stay denied)
      </label>
      <label>
        <input type="checkbox" checked={noSandbox} onChange={(e) => setNoSandbox(e.target.checked)} /> no sandbox
      </label>
      <button type="submit" className="primary">
        Add job
      </button>
      {error && <p className="error" role="alert">{error}</p>}
    </form>
  );
}
