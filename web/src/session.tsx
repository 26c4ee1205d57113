// Sessions: the list, one session's transcript (virtualized, streaming), its tree, and the
// composer (prompt, steer, follow-up, cancel).
import { useVirtualizer } from "@tanstack/react-virtual";
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from "react";
import { describeError, followRun, rpc } from "./api";
import { Safe } from "./escape";
import { Markdown } from "./markdown";
import { describeSettings, runParams, type RunSettings } from "./settings";
import { ToolCard, type OpenLogs } from "./toolview";
import { applyEvent, fromMessages, type AuditRow, type Item, type Message } from "./transcript";

interface SessionSummary {
  id: string;
  name: string;
  updatedAt: string;
  messageCount: number;
  preview: string;
}

interface TreeItem {
  id: string;
  parentId: string | null;
  depth: number;
  role: string;
  text: string;
  active: boolean;
}

interface Snapshot {
  sessionId: string;
  sessionName: string;
  modelName: string;
  messages: Message[];
  treeItems?: TreeItem[];
  draft?: string;
  notice?: string;
}

/** `session.open {limit}` (with the snapshot's names) and `session.entries`: newest first. */
interface Page {
  sessionId?: string;
  sessionName?: string;
  modelName?: string;
  messages: Message[];
  audit: AuditRow[];
  /** The cursor of the older page; null when this page reaches the start. */
  before: string | null;
  /** Index of messages[0] among the messages of the session's path. */
  firstMessage: number;
}

/** Messages a page asks for: a first screen needs a few dozen, scrolling up brings the next. */
const PAGE_MESSAGES = 100;

interface RunStatus {
  id: string;
  sessionId: string;
  done: boolean;
  messagesBefore?: number;
  prompt?: string;
}

export function SessionView({
  settings,
  selected,
  onSelect,
  approvalsChanged,
}: {
  settings: RunSettings;
  selected: string | null;
  onSelect: (id: string | null) => void;
  approvalsChanged: () => Promise<void>;
}) {
  const [sessions, setSessions] = useState<SessionSummary[]>([]);
  const [error, setError] = useState("");
  // What a fork or clone hands to the session it opens (its draft and notice).
  const [carried, setCarried] = useState<Carried | null>(null);
  // The one workspace this ggd serves (its --cwd): the sessions listed are its sessions.
  const [workspace, setWorkspace] = useState("");
  useEffect(() => {
    rpc<{ workspace?: string }>("settings.get").then(
      (s) => setWorkspace(s.workspace ?? ""),
      () => setWorkspace(""),
    );
  }, []);
  const refreshList = useCallback(async () => {
    try {
      setSessions(await rpc<SessionSummary[]>("session.list"));
    } catch (e) {
      setError(describeError(e));
    }
  }, []);
  useEffect(() => {
    void refreshList();
  }, [refreshList]);

  const create = async () => {
    try {
      const snap = await rpc<Snapshot>("session.create", {});
      await refreshList();
      onSelect(snap.sessionId);
    } catch (e) {
      setError(describeError(e));
    }
  };

  return (
    <div className={`sessions${selected ? " has-selection" : ""}`}>
      <aside className="session-list" aria-label="Sessions">
        <div className="row">
          <h2>Sessions</h2>
          <button onClick={create}>New session</button>
        </div>
        {workspace && (
          <p className="meta workspace" data-testid="workspace" title="the workspace ggd serves">
            <Safe text={workspace} />
          </p>
        )}
        {error && <p className="error" role="alert">{error}</p>}
        <ul>
          {sessions.map((s) => (
            <li key={s.id}>
              <button
                className={s.id === selected ? "session active" : "session"}
                aria-current={s.id === selected ? "true" : undefined}
                onClick={() => onSelect(s.id)}
              >
                <span className="name">
                  <Safe text={s.name || s.preview || s.id} />
                </span>
                <span className="meta">
                  {s.messageCount} messages · {new Date(s.updatedAt).toLocaleString()}
                </span>
              </button>
            </li>
          ))}
        </ul>
        {sessions.length === 0 && <p className="empty">No sessions in this workspace yet.</p>}
      </aside>
      {selected ? (
        <OpenSession
          key={selected}
          id={selected}
          settings={settings}
          onBack={() => onSelect(null)}
          carried={carried?.id === selected ? carried : null}
          onSwitch={(id, carry) => {
            setCarried({ id, ...carry });
            onSelect(id);
            void refreshList();
          }}
          listChanged={refreshList}
          approvalsChanged={approvalsChanged}
        />
      ) : (
        <section className="placeholder">
          <p>Open a session, or start a new one.</p>
        </section>
      )}
    </div>
  );
}

/** The draft and notice a fork or clone passes to the new session's view. */
interface Carried {
  id: string;
  draft?: string;
  notice?: string;
}

function OpenSession({
  id,
  settings,
  carried,
  onBack,
  onSwitch,
  listChanged,
  approvalsChanged,
}: {
  id: string;
  settings: RunSettings;
  carried: Carried | null;
  onBack: () => void;
  onSwitch: (id: string, carry: { draft?: string; notice?: string }) => void;
  listChanged: () => Promise<void>;
  approvalsChanged: () => Promise<void>;
}) {
  const [snap, setSnap] = useState<{ sessionName: string; modelName: string } | null>(null);
  const [items, setItems] = useState<Item[]>([]);
  // The cursor of the older page, while there is one, and whether it is being fetched.
  const older = useRef<string | null>(null);
  const [hasOlder, setHasOlder] = useState(false);
  const fetchingOlder = useRef(false);
  const [tree, setTree] = useState<TreeItem[] | null>(null);
  const [runId, setRunId] = useState<string | null>(null);
  const [error, setError] = useState("");
  const [notice, setNotice] = useState(carried?.notice ?? "");
  const [draft, setDraft] = useState(carried?.draft ?? "");
  const [showTree, setShowTree] = useState(false);
  const timings = useRef(new Map<string, { startedAt?: number; finishedAt?: number }>());
  // Calls whose full log is open: kept here, because a tool card is remounted when the run's
  // live items give way to the stored ones, and when it scrolls out of the virtual window.
  const [openLogs, setOpenLogs] = useState<Set<string>>(() => new Set());
  const logs: OpenLogs = {
    open: openLogs,
    toggle: (callId: string) =>
      setOpenLogs((prev) => {
        const next = new Set(prev);
        if (!next.delete(callId)) next.add(callId);
        return next;
      }),
  };
  const follow = useRef<AbortController | null>(null);

  // Bumped whenever this tab starts following a run: a load that began before is stale (it
  // may have asked run.active before the run existed) and must not reset the transcript.
  const epoch = useRef(0);

  // Bumped whenever the transcript is replaced: an older page fetched before belongs to the
  // transcript it was asked for.
  const generation = useRef(0);

  // The items as last rendered, and where the stored messages among them end (an index on the
  // session's path): the reload after a run keeps the older pages the reader brought in, and the
  // run's closing notice (a failure, a cancel), which the stored messages do not hold.
  const itemsNow = useRef<Item[]>([]);
  itemsNow.current = items;
  const storedEnd = useRef(0);

  const load = useCallback(async (endedRun?: string): Promise<void> => {
    const began = epoch.current;
    try {
      // Only the newest page (it carries its tool calls' audit rows): a first screen must not
      // wait for a whole long session.
      const [newest, active] = await Promise.all([
        rpc<Page>("session.open", { sessionId: id, limit: PAGE_MESSAGES }),
        rpc<RunStatus>("run.active", { sessionId: id }).catch(() => null),
      ]);
      if (epoch.current !== began) return;
      setSnap({ sessionName: newest.sessionName ?? "", modelName: newest.modelName ?? "" });
      let page = newest;
      if (active && !active.done) {
        // The run's events are replayed from the start, so the transcript shows only what was
        // there before the run, plus its prompt; the events rebuild the rest.
        const before = active.messagesBefore ?? page.firstMessage + page.messages.length;
        // A run that wrote more than a page: step back to the page holding its start.
        while (page.firstMessage > before && page.before !== null)
          page = await rpc<Page>("session.entries", { sessionId: id, before: page.before, limit: PAGE_MESSAGES });
        if (epoch.current !== began) return;
        generation.current++;
        const kept = page.messages.slice(0, Math.max(0, before - page.firstMessage));
        const base = fromMessages(kept, page.audit, "m", page.firstMessage);
        if (active.prompt !== undefined) base.push({ kind: "user", key: `p${active.id}`, text: active.prompt });
        older.current = page.before;
        storedEnd.current = page.firstMessage + kept.length;
        setItems(base);
        startFollowing(active.id);
      } else {
        generation.current++;
        const settled = fromMessages(page.messages, page.audit, "m", page.firstMessage);
        for (const it of settled)
          if (it.kind === "tool") Object.assign(it, timings.current.get(it.callId) ?? {});
        // Older pages shown before stay when they reach this page without a gap.
        const earlier =
          endedRun !== undefined && page.firstMessage <= storedEnd.current
            ? itemsNow.current.filter((it) => {
                const stored = /^m(\d+)/.exec(it.key);
                return stored !== null && Number(stored[1]) < page.firstMessage;
              })
            : [];
        if (earlier.length === 0) older.current = page.before;
        const closing =
          endedRun === undefined
            ? []
            : itemsNow.current.filter((it) => it.kind === "notice" && it.key.startsWith(`${endedRun}:`));
        storedEnd.current = page.firstMessage + page.messages.length;
        setItems([...earlier, ...settled, ...closing]);
        setRunId(null);
      }
      setHasOlder(older.current !== null);
    } catch (e) {
      setError(describeError(e));
    }
    // startFollowing is stable for a given session id.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [id]);

  /** Prepends the page before the oldest message shown (the person scrolled near the top). */
  const loadOlder = useCallback(async (): Promise<void> => {
    const cursor = older.current;
    if (cursor === null || fetchingOlder.current) return;
    fetchingOlder.current = true;
    const began = generation.current;
    try {
      const page = await rpc<Page>("session.entries", { sessionId: id, before: cursor, limit: PAGE_MESSAGES });
      if (generation.current !== began) return;
      const earlier = fromMessages(page.messages, page.audit, "m", page.firstMessage);
      for (const it of earlier)
        if (it.kind === "tool") Object.assign(it, timings.current.get(it.callId) ?? {});
      older.current = page.before;
      setHasOlder(page.before !== null);
      setItems((prev) => [...earlier, ...prev]);
    } catch (e) {
      setError(describeError(e));
    } finally {
      fetchingOlder.current = false;
    }
  }, [id]);

  const refreshTree = useCallback(async (): Promise<void> => {
    try {
      setTree((await rpc<{ treeItems: TreeItem[] }>("session.tree", { sessionId: id })).treeItems);
    } catch (e) {
      setError(describeError(e));
    }
  }, [id]);

  // Shown, the tree is fetched again whenever the session was (a run, a checkout, a rename).
  useEffect(() => {
    if (showTree) void refreshTree();
  }, [showTree, refreshTree, snap]);

  const startFollowing = (run: string) => {
    epoch.current++;
    follow.current?.abort();
    const controller = new AbortController();
    follow.current = controller;
    setRunId(run);
    void followRun(
      run,
      0,
      (event) => {
        if (event.type === "approval_requested" || event.type === "approval_resolved") void approvalsChanged();
        if (event.type === "agent_event" && event.agent?.toolCallId) {
          const t = timings.current.get(event.agent.toolCallId) ?? {};
          if (event.agent.type === "tool_call_start") t.startedAt = event.timestamp;
          if (event.agent.type === "tool_call_finish") t.finishedAt = event.timestamp;
          timings.current.set(event.agent.toolCallId, t);
        }
        setItems((prev) => applyEvent(prev, event));
        if (event.type === "run_completed" || event.type === "run_failed" || event.type === "run_canceled") {
          setRunId(null);
          setNotice((n) => (n.startsWith("Follow-up queued") ? "" : n));
          void load(run);
          void listChanged();
        }
      },
      controller.signal,
    );
  };

  useEffect(() => {
    void load();
    return () => follow.current?.abort();
  }, [load]);

  const send = async (followUp: boolean) => {
    const text = draft;
    if (!text.trim()) return;
    setError("");
    try {
      if (runId) {
        await rpc("run.steer", { sessionId: id, text, followUp });
        if (followUp) setNotice("Follow-up queued: it runs after the current turn.");
      } else {
        const started = await rpc<{ runId: string }>("run.start", {
          sessionId: id,
          prompt: text,
          ...runParams(settings),
        });
        setItems((prev) => [...prev, { kind: "user", key: `p${started.runId}`, text }]);
        startFollowing(started.runId);
      }
      // Only what was sent: text typed while the request was in flight (a follow-up written
      // during a steer) stays in the box.
      setDraft((current) => (current === text ? "" : current));
    } catch (e) {
      setError(describeError(e));
    }
  };

  const cancel = async () => {
    if (!runId) return;
    try {
      await rpc("run.cancel", { runId });
    } catch (e) {
      setError(describeError(e));
    }
  };

  const rename = async () => {
    const name = window.prompt("Session name", snap?.sessionName ?? "");
    if (name === null) return;
    try {
      const renamed = await rpc<Snapshot>("session.rename", { sessionId: id, name });
      epoch.current++; // a load still in flight read the old name
      setSnap({ sessionName: renamed.sessionName, modelName: renamed.modelName });
      await listChanged();
    } catch (e) {
      setError(describeError(e));
    }
  };

  const action = async (kind: "fork" | "tree" | "clone", nodeId?: string) => {
    try {
      const update = await rpc<Snapshot>("session.action", { sessionId: id, action: kind, nodeId });
      epoch.current++; // a load still in flight read the session before this change
      setNotice(update.notice ?? "");
      if (update.draft) setDraft(update.draft);
      if (update.sessionId !== id) onSwitch(update.sessionId, { draft: update.draft, notice: update.notice });
      else await load();
    } catch (e) {
      setError(describeError(e));
    }
  };

  return (
    <section className="open-session" aria-label="Session">
      <div className="session-head">
        <button className="back" onClick={onBack} aria-label="Back to the session list">
          ←
        </button>
        <h2>
          <Safe text={snap?.sessionName || id} />
        </h2>
        <span className="meta">{snap?.modelName}</span>
        <button onClick={rename}>Rename</button>
        <button onClick={() => setShowTree(!showTree)} aria-expanded={showTree}>
          Tree
        </button>
        <button onClick={() => void action("clone")}>Clone</button>
      </div>
      {showTree && tree && (
        <ol className="tree" aria-label="Session tree">
          {tree.map((t) => (
            <li key={t.id} style={{ paddingInlineStart: `${t.depth * 1.2}rem` }} className={t.active ? "active" : ""}>
              <span className="role">{t.role}</span>
              <span className="text">
                <Safe text={t.text.slice(0, 140)} />
              </span>
              <button className="link" onClick={() => void action("tree", t.id)}>
                Check out
              </button>
              {t.role === "user" && (
                <button className="link" onClick={() => void action("fork", t.id)}>
                  Fork
                </button>
              )}
            </li>
          ))}
        </ol>
      )}
      {notice && (
        <p className="notice" role="status">
          {notice}
        </p>
      )}
      <Transcript items={items} sessionId={id} logs={logs} hasOlder={hasOlder} loadOlder={loadOlder} />
      {error && (
        <p className="error" role="alert" data-testid="error">
          {error}
        </p>
      )}
      <form
        className="composer"
        onSubmit={(e) => {
          e.preventDefault();
          void send(false);
        }}
      >
        <label className="sr-only" htmlFor="prompt">
          {runId ? "Steer the running turn" : "Prompt"}
        </label>
        <textarea
          id="prompt"
          value={draft}
          rows={2}
          placeholder={runId ? "Steer the run, or queue a follow-up…" : "Ask gg…"}
          onChange={(e) => setDraft(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === "Enter" && !e.shiftKey) {
              e.preventDefault();
              void send(false);
            }
          }}
        />
        <div className="composer-actions">
          <button type="submit" className="primary">
            {runId ? "Steer" : "Send"}
          </button>
          {runId && (
            <>
              <button type="button" onClick={() => void send(true)}>
                Follow-up
              </button>
              <button type="button" className="deny" onClick={() => void cancel()}>
                Cancel run
              </button>
            </>
          )}
        </div>
        <p className="meta run-settings" data-testid="composer-settings">
          New runs: {describeSettings(settings)}
        </p>
      </form>
    </section>
  );
}

/** How close to the top (px) the reader gets before the older page is fetched. */
const OLDER_MARGIN = 600;

function Transcript({
  items,
  sessionId,
  logs,
  hasOlder,
  loadOlder,
}: {
  items: Item[];
  sessionId: string;
  logs: OpenLogs;
  hasOlder: boolean;
  loadOlder: () => Promise<void>;
}) {
  const scroller = useRef<HTMLDivElement>(null);
  const pinned = useRef(true);
  const shown = useRef(false);
  // An older page just went in above (the first row changed and the old first row is still
  // here): for this render the virtualizer keeps the row the reader is looking at in its place.
  // Only then: on an append it would hold the view where following the bottom should move it.
  const firstKey = useRef<string | undefined>(undefined);
  const prepended =
    firstKey.current !== undefined &&
    items[0]?.key !== firstKey.current &&
    items.some((it) => it.key === firstKey.current);
  useEffect(() => {
    firstKey.current = items[0]?.key;
  }, [items]);
  const virtualizer = useVirtualizer({
    count: items.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => 90,
    overscan: 6,
    getItemKey: (i) => items[i].key,
    anchorTo: prepended ? "end" : "start",
  });
  // Follow the bottom while the reader is there; leave them alone when they scrolled up.
  useLayoutEffect(() => {
    if (pinned.current && items.length > 0) virtualizer.scrollToIndex(items.length - 1, { align: "end" });
  }, [items, virtualizer]);
  // The first screen of a session: a mark in the page's performance timeline (the e2e suite reads
  // it with Chromium's own clock; DevTools shows it too).
  // Rows that do not fill the view cannot be scrolled up to: bring the older page now.
  useEffect(() => {
    const el = scroller.current;
    if (hasOlder && el && el.scrollHeight <= el.clientHeight) void loadOlder();
  }, [items, hasOlder, loadOlder]);
  useEffect(() => {
    if (shown.current || items.length === 0) return;
    shown.current = true;
    requestAnimationFrame(() => performance.mark("gg:transcript-shown"));
  }, [items]);
  return (
    <div
      className="transcript"
      ref={scroller}
      role="log"
      aria-label="Transcript"
      tabIndex={0}
      data-testid="transcript"
      onScroll={(e) => {
        const el = e.currentTarget;
        pinned.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
        if (hasOlder && el.scrollTop < OLDER_MARGIN) void loadOlder();
      }}
    >
      <div className="transcript-inner" style={{ height: `${virtualizer.getTotalSize()}px` }}>
        {virtualizer.getVirtualItems().map((row) => {
          const item = items[row.index];
          return (
            <div
              key={row.key}
              data-index={row.index}
              ref={virtualizer.measureElement}
              className="row-item"
              style={{ transform: `translateY(${row.start}px)` }}
            >
              <Entry item={item} sessionId={sessionId} logs={logs} />
            </div>
          );
        })}
      </div>
    </div>
  );
}

function Entry({ item, sessionId, logs }: { item: Item; sessionId: string; logs: OpenLogs }) {
  switch (item.kind) {
    case "user":
      return (
        <div className="msg user" data-testid="user-message">
          <Safe text={item.text} />
        </div>
      );
    case "assistant":
      return (
        <div className={`msg assistant${item.streaming ? " streaming" : ""}`} data-testid="assistant-message">
          <Markdown text={item.text} />
        </div>
      );
    case "thinking":
      return (
        <details className="msg thinking">
          <summary>thinking</summary>
          <Safe text={item.text} />
        </details>
      );
    case "tool":
      return <ToolCard t={item} sessionId={sessionId} logOpen={logs.open.has(item.callId)} toggleLog={logs.toggle} />;
    case "notice":
      return (
        <p className={`msg notice ${item.tone}`} data-testid="notice">
          {item.text}
        </p>
      );
  }
}
