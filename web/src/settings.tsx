// Settings for new runs. Kept in this tab's memory and localStorage (never the token).
import { useState } from "react";
import { describeError, rpc } from "./api";
import { useEffect } from "react";

export interface RunSettings {
  /** true: every gated call asks here (on-request); false: trusted automation (never asks). */
  requireApproval: boolean;
  /** Run bash in the sandbox; null: the daemon's default. */
  sandbox: boolean | null;
}

const KEY = "gg.runSettings";

export function loadSettings(): RunSettings {
  try {
    const raw = window.localStorage.getItem(KEY);
    if (raw) {
      const v = JSON.parse(raw);
      return {
        requireApproval: v.requireApproval !== false,
        sandbox: typeof v.sandbox === "boolean" ? v.sandbox : null,
      };
    }
  } catch {
    /* storage unavailable: defaults */
  }
  return { requireApproval: true, sandbox: null };
}

interface DaemonSettings {
  sandbox: string;
  network: string;
  maxActiveRuns: number;
  runTimeout: string;
}

export function SettingsView({ settings, onChange }: { settings: RunSettings; onChange: (s: RunSettings) => void }) {
  const [daemon, setDaemon] = useState<DaemonSettings | null>(null);
  const [error, setError] = useState("");
  useEffect(() => {
    rpc<DaemonSettings>("settings.get").then(setDaemon, (e) => setError(describeError(e)));
  }, []);
  const update = (next: RunSettings) => {
    onChange(next);
    try {
      window.localStorage.setItem(KEY, JSON.stringify(next));
    } catch {
      /* not persisted; still used in this tab */
    }
  };
  return (
    <section className="settings" aria-label="Settings">
      <h2>Settings for new runs</h2>
      <fieldset>
        <legend>Approval mode</legend>
        <label>
          <input
            type="radio"
            name="approval"
            checked={settings.requireApproval}
            onChange={() => update({ ...settings, requireApproval: true })}
          />{" "}
          Ask here (on-request): every gated call waits for your answer
        </label>
        <label>
          <input
            type="radio"
            name="approval"
            checked={!settings.requireApproval}
            onChange={() => update({ ...settings, requireApproval: false })}
          />{" "}
          Never ask (trusted automation): gated calls run, dangerous commands are denied
        </label>
      </fieldset>
      <fieldset>
        <legend>Sandbox</legend>
        <label>
          <input type="radio" name="sandbox" checked={settings.sandbox === null} onChange={() => update({ ...settings, sandbox: null })} />{" "}
          Daemon default{daemon ? ` (${daemon.sandbox})` : ""}
        </label>
        <label>
          <input type="radio" name="sandbox" checked={settings.sandbox === true} onChange={() => update({ ...settings, sandbox: true })} />{" "}
          On: bash runs in the sandbox (working directory writable, the rest read-only)
        </label>
        <label>
          <input type="radio" name="sandbox" checked={settings.sandbox === false} onChange={() => update({ ...settings, sandbox: false })} />{" "}
          Off
        </label>
      </fieldset>
      <fieldset>
        <legend>Network policy</legend>
        <p>
          {daemon ? daemon.network : "…"} — set by ggd's configuration for every run; this build has no per-run
          network setting.
        </p>
      </fieldset>
      {daemon && (
        <p className="meta">
          ggd: at most {daemon.maxActiveRuns} active runs, each at most {daemon.runTimeout}.
        </p>
      )}
      {error && <p className="error" role="alert">{error}</p>}
    </section>
  );
}
