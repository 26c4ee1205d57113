import { describe, expect, it } from "vitest";
import type { RunEvent } from "../src/api";
import { escapeText } from "../src/escape";
import { applyEvent, fromMessages, parseDetails, type Item } from "../src/transcript";
import { exitStatus } from "../src/toolview";

function event(sequence: number, fields: Partial<RunEvent>): RunEvent {
  return { id: `e${sequence}`, sessionId: "s", runId: "r", sequence, timestamp: sequence * 100, type: "agent_event", ...fields };
}

describe("escapeText", () => {
  it("shows control characters and bidi overrides escaped, keeps newlines and tabs", () => {
    expect(escapeText("a\u001b[31mb")).toBe("a\\x1b[31mb");
    expect(escapeText("rm -rf /\u202e/txt.exe")).toBe("rm -rf /\\u{202e}/txt.exe");
    expect(escapeText("x\u2066y\u2069")).toBe("x\\u{2066}y\\u{2069}");
    expect(escapeText("line\n\tnext")).toBe("line\n\tnext");
    expect(escapeText("\u0085")).toBe("\\x85");
  });

  it("shows invisible characters escaped: tag characters, zero-width and other ignorables", () => {
    expect(escapeText("ok\u{e0041}\u{e007f}")).toBe("ok\\u{e0041}\\u{e007f}");
    expect(escapeText("ig\u200bnore")).toBe("ig\\u{200b}nore");
    expect(escapeText("\u2060\ufeff\ufe0f\u{1d173}\u{e0100}")).toBe(
      "\\u{2060}\\u{feff}\\u{fe0f}\\u{1d173}\\u{e0100}",
    );
    expect(escapeText("\u00ad")).toBe("\\xad");
    expect(escapeText("日本語 🙂 é")).toBe("日本語 🙂 é");
  });
});

describe("parseDetails", () => {
  it("reads the command, class and reasons with spans", () => {
    const parsed = parseDetails(
      "command: curl x | sh\nclassification: dangerous\n  - download.pipe-to-interpreter: runs it [9..11]\n  - old.form: no span\ncwd: /p\ntimeout: 120s",
    );
    expect(parsed.command).toBe("curl x | sh");
    expect(parsed.classification).toBe("dangerous");
    expect(parsed.reasons).toEqual([
      { rule: "download.pipe-to-interpreter", message: "runs it", span: [9, 11] },
      { rule: "old.form", message: "no span" },
    ]);
  });
});

describe("applyEvent", () => {
  it("streams text, then a tool call through approval to its output", () => {
    let items: Item[] = [];
    items = applyEvent(items, event(1, { type: "run_started" }));
    items = applyEvent(items, event(2, { agent: { type: "text_delta", text: "Hel" } }));
    items = applyEvent(items, event(3, { agent: { type: "text_delta", text: "lo" } }));
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ kind: "assistant", text: "Hello", streaming: true });
    items = applyEvent(items, event(4, { agent: { type: "tool_call_start", toolCallId: "c1", toolName: "bash", summary: "bash ls -la" } }));
    expect(items[0]).toMatchObject({ streaming: false });
    items = applyEvent(
      items,
      event(5, {
        type: "approval_requested",
        approval: {
          id: "a1",
          request: { toolCallId: "c1", toolName: "bash", summary: "bash ls -la", details: "command: ls -la\nclassification: normal\n  - r: m [0..2]\n", reason: "asks", dangerous: false },
        },
      }),
    );
    expect(items[1]).toMatchObject({ kind: "tool", command: "ls -la", classification: "normal", pendingApproval: "a1" });
    items = applyEvent(items, event(6, { type: "approval_resolved", approval: { id: "a1" }, decision: { allow: false } }));
    expect(items[1]).toMatchObject({ decision: { action: "deny", decidedBy: "user" }, pendingApproval: undefined });
    items = applyEvent(items, event(7, { agent: { type: "tool_call_finish", toolCallId: "c1", toolName: "bash", text: "denied", isError: true } }));
    expect(items[1]).toMatchObject({ output: "denied", isError: true, startedAt: 400, finishedAt: 700 });
    items = applyEvent(items, event(8, { type: "run_failed", error: "boom" }));
    expect(items[2]).toMatchObject({ kind: "notice", tone: "error" });
  });
});

describe("fromMessages", () => {
  it("joins results and the audit trail to their calls", () => {
    const items = fromMessages(
      [
        { role: "user", content: "go" },
        { role: "assistant", toolCalls: [{ id: "c1", name: "bash", arguments: { command: "make" } }] },
        { role: "tool", toolCallId: "c1", toolName: "bash", content: "built" },
      ],
      [
        {
          timestamp: "",
          callId: "c1",
          tool: "bash",
          arguments: "",
          status: "ok",
          audit: { classification: { verdict: "normal" }, decision: { action: "allow", decidedBy: "user" }, sandbox: { level: "bwrap" } },
        },
      ],
      "m",
    );
    expect(items).toHaveLength(2);
    expect(items[1]).toMatchObject({ kind: "tool", command: "make", output: "built", classification: "normal", sandbox: "bwrap" });
  });

  it("keys a page's items by their place on the session's path", () => {
    const page = [
      { role: "user", content: "q" },
      { role: "assistant", content: "a" },
    ];
    expect(fromMessages(page, [], "m", 9900).map((it) => it.key)).toEqual(["m9900", "m9901"]);
    expect(fromMessages(page, [], "m").map((it) => it.key)).toEqual(["m0", "m1"]);
  });
});

describe("exitStatus", () => {
  it("reads the bash tool's ending line", () => {
    expect(exitStatus({ name: "bash", output: "made\n" })).toBe("exit 0");
    expect(exitStatus({ name: "bash", output: "no such file\nexit code 2", isError: true })).toBe("exit 2");
    expect(exitStatus({ name: "bash", output: "x\nkilled by signal 9", isError: true })).toBe("killed (signal 9)");
    expect(exitStatus({ name: "bash", output: "command timed out after 2m0s", isError: true })).toBe("timed out");
    expect(exitStatus({ name: "bash", output: 'tool call "bash" denied by user', isError: true })).toBeUndefined();
    expect(exitStatus({ name: "write", output: "wrote a" })).toBeUndefined();
  });
});
