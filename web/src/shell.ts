// The bridge to gg-desktop, the native shell around this page. It exists only inside that
// window, where the shell defines `window.ipc`; in a browser none of this runs.
//
// The shell answers four commands (docs/security-model.md): `session` (the token, kept in this
// module's caller's memory only, never in a URL or storage), `openExternal`, `approvalWaiting` and
// `chooseWorkspace`. Answers arrive as `gg-shell` DOM events matched by id.

declare global {
  interface Window {
    ipc?: { postMessage(message: string): void };
  }
}

export interface ShellSession {
  token: string;
  workspace: string;
  /** Set when the shell had to restart ggd. */
  notice: string | null;
}

interface ShellReply {
  id: number;
  ok: boolean;
  result?: unknown;
  error?: string;
}

const waiting = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
let nextId = 1;
let listening = false;

export function inShell(): boolean {
  return typeof window.ipc?.postMessage === "function";
}

function listen(): void {
  if (listening) return;
  listening = true;
  window.addEventListener("gg-shell", (event) => {
    const reply = (event as CustomEvent<ShellReply>).detail;
    const pending = waiting.get(reply.id);
    if (!pending) return;
    waiting.delete(reply.id);
    if (reply.ok) pending.resolve(reply.result);
    else pending.reject(new Error(reply.error ?? "the desktop shell refused"));
  });
}

export function askShell<T>(cmd: string, args?: object): Promise<T> {
  listen();
  const id = nextId++;
  return new Promise<T>((resolve, reject) => {
    waiting.set(id, { resolve: resolve as (value: unknown) => void, reject });
    window.ipc?.postMessage(JSON.stringify(args ? { id, cmd, args } : { id, cmd }));
  });
}

/**
 * Links to other sites leave through the shell, which opens them in the system browser after
 * the same checks as the agent's `open` tool; the window itself never navigates away.
 */
export function sendLinksToBrowser(): void {
  document.addEventListener("click", (event) => {
    const anchor = (event.target as Element | null)?.closest?.("a[href]") as HTMLAnchorElement | null;
    if (!anchor) return;
    const url = new URL(anchor.href, window.location.href);
    if (url.origin === window.location.origin) return;
    event.preventDefault();
    askShell("openExternal", { url: url.href }).catch(() => {
      /* refused: the shell says why on its side */
    });
  });
}
