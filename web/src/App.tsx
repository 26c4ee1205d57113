import { useCallback, useEffect, useRef, useState } from "react";
import { describeError, rpc } from "./api";
import { Approvals, usePendingApprovals } from "./approvals";
import { AuditView } from "./audit";
import { JobsView } from "./jobs";
import { KnowledgeView } from "./knowledge";
import { McpView } from "./mcp";
import { MediaView } from "./media";
import { SessionView } from "./session";
import { SettingsView, loadSettings, type RunSettings } from "./settings";
import { askShell, type ShellSession } from "./shell";

type View = "sessions" | "audit" | "jobs" | "knowledge" | "mcp" | "settings" | "media";
const VIEWS: [View, string][] = [
  ["sessions", "Sessions"],
  ["audit", "Audit"],
  ["jobs", "Jobs"],
  ["knowledge", "Knowledge"],
  ["mcp", "MCP"],
  ["settings", "Settings"],
  ["media", "Media"],
];

export function App({ authorized, shell = null }: { authorized: boolean; shell?: ShellSession | null }) {
  const [view, setView] = useState<View>("sessions");
  const [settings, setSettings] = useState<RunSettings>(loadSettings);
  const [connected, setConnected] = useState<string>("connecting");
  const approvals = usePendingApprovals(authorized);
  // The open session survives a reload of this tab (sessionStorage: this tab only).
  const [openSession, setOpenSessionState] = useState<string | null>(() => {
    try {
      return window.sessionStorage.getItem("gg.session");
    } catch {
      return null;
    }
  });
  const setOpenSession = useCallback((id: string | null) => {
    setOpenSessionState(id);
    try {
      if (id) window.sessionStorage.setItem("gg.session", id);
      else window.sessionStorage.removeItem("gg.session");
    } catch {
      /* not kept across reloads */
    }
  }, []);
  const main = useRef<HTMLElement>(null);
  useDesktopNotifications(shell !== null, approvals.pending);

  useEffect(() => {
    if (!authorized) return;
    rpc<{ protocolVersion: string }>("system.info")
      .then((info) => setConnected(`ggd ${info.protocolVersion}`))
      .catch((e) => setConnected(describeError(e)));
  }, [authorized]);

  const go = useCallback(
    (session: string) => {
      setOpenSession(session);
      setView("sessions");
    },
    [setOpenSession],
  );

  if (!authorized) {
    return (
      <main className="unauthorized">
        <h1>gg</h1>
        <p>
          This page needs the address that <code>gg web</code> prints (it carries the access token after
          <code>#</code>). Run <code>gg web</code> and open that address.
        </p>
      </main>
    );
  }

  return (
    <div className="app">
      <header className="top">
        <h1 className="brand">gg</h1>
        <nav aria-label="Views">
          {VIEWS.map(([id, label]) => (
            <button
              key={id}
              className={view === id ? "tab active" : "tab"}
              aria-current={view === id ? "page" : undefined}
              onClick={() => setView(id)}
            >
              {label}
            </button>
          ))}
        </nav>
        <span className="status" title="connection">
          {connected}
        </span>
        {shell && (
          <span className="workspace">
            <span title="workspace">{shell.workspace}</span>
            <button className="tab" onClick={() => void askShell("chooseWorkspace").catch(() => undefined)}>
              Choose workspace…
            </button>
          </span>
        )}
      </header>
      {shell?.notice && (
        <p className="shell-notice" role="alert">
          {shell.notice}
        </p>
      )}
      <Approvals pending={approvals.pending} refresh={approvals.refresh} onOpen={go} />
      <main ref={main} className="main">
        {view === "sessions" && (
          <SessionView
            settings={settings}
            selected={openSession}
            onSelect={setOpenSession}
            approvalsChanged={approvals.refresh}
          />
        )}
        {view === "audit" && <AuditView onOpen={go} />}
        {view === "jobs" && <JobsView />}
        {view === "knowledge" && <KnowledgeView />}
        {view === "mcp" && <McpView />}
        {view === "settings" && <SettingsView settings={settings} onChange={setSettings} />}
        {view === "media" && <MediaView />}
      </main>
    </div>
  );
}

/** In gg-desktop: each newly waiting approval is reported once to the shell, which shows a
 * desktop notification when its window is not focused. */
function useDesktopNotifications(enabled: boolean, pending: { id: string; request: { summary: string } }[]): void {
  const told = useRef<Set<string>>(new Set());
  useEffect(() => {
    if (!enabled) return;
    for (const p of pending) {
      if (told.current.has(p.id)) continue;
      told.current.add(p.id);
      void askShell("approvalWaiting", { summary: p.request.summary }).catch(() => undefined);
    }
  }, [enabled, pending]);
}
