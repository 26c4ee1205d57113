// Settings for new runs. Kept in this tab's memory and localStorage (never the token).
import { useEffect, useState } from "react";
import { describeError, rpc } from "./api";
import { ConnectorsView } from "./connectors";

export type NetworkMode = "off" | "allow-list" | "on";

export interface RunSettings {
  /** true: every gated call asks here (on-request); false: trusted automation (never asks). */
  requireApproval: boolean;
  /** Run bash in the sandbox; null: the daemon's default. */
  sandbox: boolean | null;
  /** The network policy of sandboxed commands; null: the daemon's default. */
  network: NetworkMode | null;
  /** Hosts added to the allow-list (with `allow-list`). */
  allowDomains: string[];
}

const KEY = "gg.runSettings";
const MODES: NetworkMode[] = ["off", "allow-list", "on"];

export function loadSettings(): RunSettings {
  try {
    const raw = window.localStorage.getItem(KEY);
    if (raw) {
      const v = JSON.parse(raw);
      return {
        requireApproval: v.requireApproval !== false,
        sandbox: typeof v.sandbox === "boolean" ? v.sandbox : null,
        network: MODES.includes(v.network) ? v.network : null,
        allowDomains: Array.isArray(v.allowDomains) ? v.allowDomains.filter((d: unknown) => typeof d === "string") : [],
      };
    }
  } catch {
    /* storage unavailable: defaults */
  }
  return { requireApproval: true, sandbox: null, network: null, allowDomains: [] };
}

/** Hosts typed by a person: separated by commas, spaces or new lines. */
export function parseDomains(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((d) => d.trim())
    .filter((d) => d !== "");
}

/**
 * The `run.start` parameters these settings add. The network policy is sent only with the
 * sandbox (absent = the daemon's); ggd refuses a policy it cannot enforce, and says so.
 */
export function runParams(s: RunSettings): Record<string, unknown> {
  const params: Record<string, unknown> = { requireApproval: s.requireApproval, sandbox: s.sandbox };
  if (s.sandbox !== false && s.network !== null) {
    params.network = s.network;
    if (s.network === "allow-list" && s.allowDomains.length > 0) params.allowDomains = s.allowDomains;
  }
  return params;
}

/** One line that says what a new run gets, shown by the composer. */
export function describeSettings(s: RunSettings): string {
  const parts = [s.requireApproval ? "asks here" : "never asks"];
  parts.push(s.sandbox === null ? "sandbox: default" : s.sandbox ? "sandbox on" : "sandbox off");
  if (s.sandbox !== false && s.network !== null) {
    const extra = s.network === "allow-list" && s.allowDomains.length ? ` +${s.allowDomains.join(", ")}` : "";
    parts.push(`network ${s.network}${extra}`);
  }
  return parts.join(" · ");
}

interface DaemonSettings {
  sandbox: string;
  network: string;
  allowDomains?: string[];
  maxActiveRuns: number;
  runTimeout: string;
}

const NETWORK_LABELS: Record<NetworkMode, string> = {
  off: "Off: no network at all inside the sandbox",
  "allow-list": "Allow-list: only listed hosts, through gg's proxy",
  on: "On: not isolated",
};

export function SettingsView({ settings, onChange }: { settings: RunSettings; onChange: (s: RunSettings) => void }) {
  const [daemon, setDaemon] = useState<DaemonSettings | null>(null);
  const [error, setError] = useState("");
  const [domains, setDomains] = useState(settings.allowDomains.join(", "));
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
  // The policy needs the sandbox: off (chosen, or the daemon's default) leaves nothing to set.
  const sandboxed = settings.sandbox ?? daemon?.sandbox === "on";
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
      <fieldset disabled={!sandboxed} aria-describedby="network-note">
        <legend>Network policy</legend>
        <label>
          <input
            type="radio"
            name="network"
            checked={settings.network === null}
            onChange={() => update({ ...settings, network: null })}
          />{" "}
          Default{daemon ? ` (${daemon.sandbox === "on" ? daemon.network : "allow-list"})` : ""}
        </label>
        {MODES.map((mode) => (
          <label key={mode}>
            <input
              type="radio"
              name="network"
              checked={settings.network === mode}
              onChange={() => update({ ...settings, network: mode })}
            />{" "}
            {NETWORK_LABELS[mode]}
          </label>
        ))}
        {settings.network === "allow-list" && (
          <label className="stacked">
            Further hosts (comma or space separated; <code>*.example.org</code> for subdomains)
            <input
              type="text"
              value={domains}
              spellCheck={false}
              autoCapitalize="off"
              onChange={(e) => {
                setDomains(e.target.value);
                update({ ...settings, allowDomains: parseDomains(e.target.value) });
              }}
            />
          </label>
        )}
        <p id="network-note" className="meta">
          {sandboxed
            ? `The project's .gg/settings.json can only tighten this.${
                daemon?.allowDomains?.length ? ` Allowed by default: ${daemon.allowDomains.join(", ")}.` : ""
              }`
            : "The network policy needs the sandbox: without it commands have full network access."}
        </p>
      </fieldset>
      {daemon && (
        <p className="meta">
          ggd: at most {daemon.maxActiveRuns} active runs, each at most {daemon.runTimeout}.
        </p>
      )}
      <p className="meta" data-testid="run-settings">
        New runs: {describeSettings(settings)}
      </p>
      {error && <p className="error" role="alert">{error}</p>}
      <ConnectorsView />
    </section>
  );
}
