// The ggd client: JSON-RPC over POST /rpc and the run event stream over GET /events.
//
// The token lives only in this module's memory and travels only in the Authorization header:
// never in a URL (so never in a log, history entry or Referer). EventSource cannot send headers,
// so the SSE stream is read with fetch and parsed here; a reconnect sends Last-Event-ID itself.

let token = "";

export function setToken(value: string): void {
  token = value;
}

export function hasToken(): boolean {
  return token !== "";
}

/**
 * Takes `#token=…` out of the address bar into memory. A copy is kept in this tab's
 * sessionStorage (same origin, this tab only, gone when the tab closes) so that a reload keeps
 * working; it is never written to the URL again. Returns whether a token is known.
 */
export function adoptTokenFromLocation(): boolean {
  const hash = window.location.hash.replace(/^#/, "");
  const found = new URLSearchParams(hash).get("token");
  if (found) {
    setToken(found);
    // Replace, not push: the token must not stay in the history either.
    window.history.replaceState(null, "", window.location.pathname);
    try {
      window.sessionStorage.setItem(TOKEN_KEY, found);
    } catch {
      /* storage unavailable: a reload needs the URL again */
    }
    return true;
  }
  try {
    const kept = window.sessionStorage.getItem(TOKEN_KEY);
    if (kept) {
      setToken(kept);
      return true;
    }
  } catch {
    /* storage unavailable */
  }
  return false;
}

const TOKEN_KEY = "gg.token";

export class RpcFailure extends Error {
  code: number;
  name2: string;
  retryable: boolean;
  constructor(code: number, message: string, name2: string, retryable: boolean) {
    super(message);
    this.code = code;
    this.name2 = name2;
    this.retryable = retryable;
  }
}

let nextId = 1;

export async function rpc<T = unknown>(method: string, params?: object): Promise<T> {
  const id = nextId++;
  const response = await fetch("/rpc", {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id, method, params: params ?? {} }),
    cache: "no-store",
    credentials: "omit",
    referrerPolicy: "no-referrer",
  });
  if (response.status === 401) {
    throw new RpcFailure(401, "not authorized: open the page with the URL `gg web` printed", "unauthorized", false);
  }
  const body = await response.json();
  if (body.error) {
    const data = body.error.data ?? {};
    throw new RpcFailure(body.error.code, body.error.message, data.code ?? "", !!data.retryable);
  }
  return body.result as T;
}

export interface RunEvent {
  id: string;
  sessionId: string;
  runId: string;
  sequence: number;
  timestamp: number;
  type: string;
  agent?: { type: string; text?: string; toolCallId?: string; toolName?: string; summary?: string; isError?: boolean };
  approval?: { id: string; request?: ApprovalRequest };
  decision?: { allow: boolean; scope?: string };
  result?: { Content?: string };
  error?: string;
  errorCode?: string;
}

export interface ApprovalRequest {
  toolCallId: string;
  toolName: string;
  summary: string;
  details: string;
  reason: string;
  dangerous: boolean;
}

/**
 * Follows a run's events from `after` until the run ends or `signal` aborts. A dropped
 * connection is resumed with Last-Event-ID = the last sequence seen, so nothing is lost or
 * repeated.
 */
export async function followRun(
  runId: string,
  after: number,
  onEvent: (event: RunEvent) => void,
  signal: AbortSignal,
): Promise<void> {
  let last = after;
  let failures = 0;
  while (!signal.aborted) {
    let ended = false;
    try {
      const response = await fetch(`/events?runId=${encodeURIComponent(runId)}`, {
        headers: { Authorization: `Bearer ${token}`, Accept: "text/event-stream", "Last-Event-ID": String(last) },
        cache: "no-store",
        credentials: "omit",
        referrerPolicy: "no-referrer",
        signal,
      });
      if (!response.ok || !response.body) throw new Error(`events: HTTP ${response.status}`);
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let cut: number;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const frame = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          let kind = "message";
          let data = "";
          for (const line of frame.split("\n")) {
            if (line.startsWith("event:")) kind = line.slice(6).trim();
            else if (line.startsWith("data:")) data += line.slice(5).trimStart();
          }
          if (kind === "error") {
            ended = true;
            continue;
          }
          if (kind === "event" && data) {
            const event = JSON.parse(data) as RunEvent;
            if (event.sequence <= last) continue;
            last = event.sequence;
            failures = 0;
            onEvent(event);
            if (event.type === "run_completed" || event.type === "run_failed" || event.type === "run_canceled") {
              ended = true;
            }
          }
        }
      }
    } catch (error) {
      if (signal.aborted) return;
      failures++;
    }
    if (ended) return;
    // The stream closed early (daemon restart, network blip): back off a little and resume.
    await new Promise((resolve) => setTimeout(resolve, Math.min(5000, 250 * 2 ** Math.min(failures, 5))));
  }
}

/** An error as a person should read it; the run limit's refusal is said plainly. */
export function describeError(error: unknown): string {
  if (error instanceof RpcFailure) {
    if (error.name2 === "run_limit_reached")
      return `The run limit is reached (${error.message}). Your prompt is kept: send it again when a run finishes, or cancel one.`;
    return error.message;
  }
  return error instanceof Error ? error.message : String(error);
}

