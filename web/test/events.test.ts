import { afterEach, describe, expect, it, vi } from "vitest";
import { followRun, setToken, type RunEvent } from "../src/api";

function frame(sequence: number, type: string): string {
  const event = { id: `e${sequence}`, sessionId: "s", runId: "r", sequence, timestamp: sequence, type };
  return `id: ${sequence}\nevent: event\ndata: ${JSON.stringify(event)}\n\n`;
}

function stream(text: string): Response {
  const bytes = new TextEncoder().encode(text);
  return new Response(
    new ReadableStream({
      start(controller) {
        // Split mid-frame, as the network may.
        controller.enqueue(bytes.slice(0, 25));
        controller.enqueue(bytes.slice(25));
        controller.close();
      },
    }),
    { status: 200, headers: { "Content-Type": "text/event-stream" } },
  );
}

afterEach(() => vi.unstubAllGlobals());

describe("followRun", () => {
  it("resumes a dropped stream with Last-Event-ID, nothing lost or repeated, token only in the header", async () => {
    setToken("secret-token");
    const requests: { url: string; headers: Record<string, string> }[] = [];
    const replies = [
      // The connection drops after event 2, before the run ends.
      () => stream(frame(1, "agent_event") + frame(2, "agent_event")),
      // The resumed stream repeats event 2 (a server may), then goes on to the end.
      () => stream(frame(2, "agent_event") + frame(3, "agent_event") + frame(4, "run_completed")),
    ];
    vi.stubGlobal(
      "fetch",
      vi.fn(async (url: string, init: RequestInit) => {
        requests.push({ url, headers: init.headers as Record<string, string> });
        const next = replies.shift();
        if (!next) throw new Error("no more replies");
        return next();
      }),
    );
    const seen: RunEvent[] = [];
    await followRun("r", 0, (e) => seen.push(e), new AbortController().signal);
    expect(seen.map((e) => e.sequence)).toEqual([1, 2, 3, 4]);
    expect(requests.map((r) => r.headers["Last-Event-ID"])).toEqual(["0", "2"]);
    for (const r of requests) {
      expect(r.url).not.toContain("secret-token");
      expect(r.headers.Authorization).toBe("Bearer secret-token");
    }
  });
});
