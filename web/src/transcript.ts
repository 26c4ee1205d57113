// Transcript items: what the session view renders, built from a session snapshot, the audit
// trail, and a run's live events.
import type { ApprovalRequest, RunEvent } from "./api";

export interface Reason {
  rule: string;
  message: string;
  span?: [number, number];
}

export interface ToolItem {
  kind: "tool";
  key: string;
  callId: string;
  name: string;
  summary: string;
  command?: string;
  classification?: string;
  reasons: Reason[];
  details?: string;
  reason?: string;
  dangerous?: boolean;
  decision?: { action: string; decidedBy: string; mode?: string; rule?: string };
  sandbox?: string;
  output?: string;
  isError?: boolean;
  status?: string;
  startedAt?: number;
  finishedAt?: number;
  pendingApproval?: string;
  /** Images the call saved (paths under ~/.gg/media), shown from ggd's media.read. */
  images?: string[];
}

export type Item =
  | { kind: "user"; key: string; text: string }
  | { kind: "assistant"; key: string; text: string; streaming: boolean }
  | { kind: "thinking"; key: string; text: string }
  | ToolItem
  | { kind: "notice"; key: string; text: string; tone: "info" | "error" };

export interface Message {
  role: string;
  content?: string;
  toolCalls?: { id: string; name: string; arguments: unknown }[];
  toolCallId?: string;
  toolName?: string;
  error?: string;
  images?: string[];
}

export interface AuditRow {
  sessionId?: string;
  sessionName?: string;
  timestamp: string;
  callId: string;
  tool: string;
  arguments: string;
  status: string;
  error?: string;
  audit?: {
    classification?: { verdict: string; reasons?: Reason[] };
    decision?: { action: string; decidedBy: string; mode?: string; rule?: string };
    sandbox?: { level: string; warning?: string };
  };
}

/**
 * Whether a bash result was truncated with its full output saved: the bash tool's header is its
 * first two lines (`... output truncated: …`, `Full output saved to: …`). ggd finds the file
 * itself from the session (`tool.log`); the page never sends a path.
 */
export function hasSavedLog(output: string | undefined): boolean {
  if (!output) return false;
  const [first, second] = output.split("\n", 2);
  return first.startsWith("... output truncated: omitted ") && (second ?? "").startsWith("Full output saved to: ");
}

/** The command of a bash call's JSON arguments, if it has one. */
export function commandOf(args: unknown): string | undefined {
  try {
    const value = typeof args === "string" ? JSON.parse(args) : args;
    if (value && typeof value === "object" && typeof (value as { command?: unknown }).command === "string") {
      return (value as { command: string }).command;
    }
  } catch {
    /* not JSON: no command */
  }
  return undefined;
}

/** Parses the bash approval details (`command:`, `classification:`, `  - rule: message`). */
export function parseDetails(details: string): { command?: string; classification?: string; reasons: Reason[] } {
  const out: { command?: string; classification?: string; reasons: Reason[] } = { reasons: [] };
  const lines = details.split("\n");
  for (const line of lines) {
    if (line.startsWith("command: ") && out.command === undefined) out.command = line.slice(9);
    else if (line.startsWith("classification: ")) out.classification = line.slice(16).trim();
    else {
      const m = /^ {2}- ([^:]+): (.*?)(?: \[(\d+)\.\.(\d+)\])?$/.exec(line);
      if (m) {
        const reason: Reason = { rule: m[1], message: m[2] };
        if (m[3] !== undefined) reason.span = [Number(m[3]), Number(m[4])];
        out.reasons.push(reason);
      }
    }
  }
  return out;
}

function applyAudit(item: ToolItem, row: AuditRow | undefined) {
  if (!row) return;
  item.status = row.status;
  const audit = row.audit;
  if (audit?.classification) {
    item.classification = audit.classification.verdict;
    if (audit.classification.reasons?.length) item.reasons = audit.classification.reasons;
  }
  if (audit?.decision) item.decision = audit.decision;
  if (audit?.sandbox) item.sandbox = audit.sandbox.level;
}

/**
 * Items of a stored conversation, with the audit trail merged into its tool calls. `first`: the
 * index of `messages[0]` on the session's path (a page), so that keys stay the same whichever
 * page an item came with.
 */
export function fromMessages(messages: Message[], audit: AuditRow[], prefix: string, first = 0): Item[] {
  const items: Item[] = [];
  const byCall = new Map<string, ToolItem>();
  const auditByCall = new Map<string, AuditRow>();
  for (const row of audit) auditByCall.set(row.callId, row);
  messages.forEach((m, i) => {
    const key = `${prefix}${first + i}`;
    if (m.role === "user") items.push({ kind: "user", key, text: m.content ?? "" });
    else if (m.role === "assistant") {
      if (m.content) items.push({ kind: "assistant", key, text: m.content, streaming: false });
      for (const call of m.toolCalls ?? []) {
        const args = typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments);
        const command = call.name === "bash" ? commandOf(call.arguments) : undefined;
        const item: ToolItem = {
          kind: "tool",
          key: `${key}-${call.id}`,
          callId: call.id,
          name: call.name,
          summary: command !== undefined ? `bash ${command}` : `${call.name} ${args.slice(0, 120)}`,
          command,
          reasons: [],
        };
        applyAudit(item, auditByCall.get(call.id));
        byCall.set(call.id, item);
        items.push(item);
      }
    } else if (m.role === "tool" || m.role === "toolResult") {
      const item = m.toolCallId ? byCall.get(m.toolCallId) : undefined;
      if (item) {
        item.output = m.content ?? "";
        item.isError = !!m.error;
        if (m.error && !item.output) item.output = m.error;
        if (m.images?.length) item.images = m.images;
      }
    }
  });
  return items;
}

function endStreaming(items: Item[]) {
  const last = items[items.length - 1];
  if (last && last.kind === "assistant" && last.streaming) items[items.length - 1] = { ...last, streaming: false };
}

function updateTool(items: Item[], callId: string, change: (t: ToolItem) => ToolItem): boolean {
  for (let i = items.length - 1; i >= 0; i--) {
    const it = items[i];
    if (it.kind === "tool" && it.callId === callId) {
      items[i] = change(it);
      return true;
    }
  }
  return false;
}

/** Applies one run event; returns a new array when something changed. */
export function applyEvent(prev: Item[], event: RunEvent): Item[] {
  const items = prev.slice();
  const key = `${event.runId}:${event.sequence}`;
  const a = event.agent;
  switch (event.type) {
    case "agent_event":
      if (!a) return prev;
      if (a.type === "text_delta") {
        const last = items[items.length - 1];
        if (last && last.kind === "assistant" && last.streaming) {
          items[items.length - 1] = { ...last, text: last.text + (a.text ?? "") };
        } else items.push({ kind: "assistant", key, text: a.text ?? "", streaming: true });
      } else if (a.type === "thinking_delta") {
        const last = items[items.length - 1];
        if (last && last.kind === "thinking") items[items.length - 1] = { ...last, text: last.text + (a.text ?? "") };
        else items.push({ kind: "thinking", key, text: a.text ?? "" });
      } else if (a.type === "tool_call_start") {
        endStreaming(items);
        const summary = a.summary ?? a.toolName ?? "";
        items.push({
          kind: "tool",
          key,
          callId: a.toolCallId ?? key,
          name: a.toolName ?? "",
          summary,
          command: a.toolName === "bash" && summary.startsWith("bash ") ? summary.slice(5) : undefined,
          reasons: [],
          startedAt: event.timestamp,
        });
      } else if (a.type === "tool_call_finish") {
        updateTool(items, a.toolCallId ?? "", (t) => ({
          ...t,
          output: a.text ?? "",
          isError: !!a.isError,
          status: a.isError ? "error" : "ok",
          finishedAt: event.timestamp,
          pendingApproval: undefined,
        }));
      } else if (a.type === "user_message") {
        endStreaming(items);
        items.push({ kind: "user", key, text: a.text ?? "" });
      }
      return items;
    case "approval_requested": {
      const req = event.approval?.request as ApprovalRequest | undefined;
      if (!req) return prev;
      const parsed = req.toolName === "bash" ? parseDetails(req.details) : { reasons: [] as Reason[] };
      const found = updateTool(items, req.toolCallId, (t) => ({
        ...t,
        details: req.details,
        reason: req.reason,
        dangerous: req.dangerous,
        command: parsed.command ?? t.command,
        classification: parsed.classification ?? t.classification,
        reasons: parsed.reasons.length ? parsed.reasons : t.reasons,
        pendingApproval: event.approval?.id,
      }));
      return found ? items : prev;
    }
    case "approval_resolved": {
      const id = event.approval?.id;
      for (let i = items.length - 1; i >= 0; i--) {
        const it = items[i];
        if (it.kind === "tool" && it.pendingApproval === id) {
          const allow = !!event.decision?.allow;
          items[i] = {
            ...it,
            pendingApproval: undefined,
            decision: { action: allow ? "allow" : "deny", decidedBy: "user", mode: "on-request" },
          };
          return items;
        }
      }
      return prev;
    }
    case "run_failed":
      endStreaming(items);
      items.push({ kind: "notice", key, text: `Run failed: ${event.error ?? "unknown error"}`, tone: "error" });
      return items;
    case "run_canceled":
      endStreaming(items);
      items.push({ kind: "notice", key, text: "Run canceled.", tone: "info" });
      return items;
    case "run_completed":
      endStreaming(items);
      return items;
    default:
      return prev;
  }
}
