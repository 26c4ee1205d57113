import { afterEach, describe, expect, it } from "vitest";

// The desktop shell's bridge, with a stand-in for wry's `window.ipc` and the shell's replies.
describe("shell bridge", () => {
  afterEach(() => {
    delete (globalThis as { window?: unknown }).window;
  });

  it("asks by id and takes only the reply with that id", async () => {
    const target = new EventTarget();
    const sent: string[] = [];
    (globalThis as { window?: unknown }).window = Object.assign(target, {
      ipc: { postMessage: (message: string) => void sent.push(message) },
    });
    const { askShell, inShell } = await import("../src/shell");
    expect(inShell()).toBe(true);
    const session = askShell<{ token: string }>("session");
    const refused = askShell("openExternal", { url: "https://docs.rs/" });
    const [first, second] = sent.map((m) => JSON.parse(m));
    expect(first).toEqual({ id: first.id, cmd: "session" });
    expect(second).toEqual({ id: second.id, cmd: "openExternal", args: { url: "https://docs.rs/" } });
    target.dispatchEvent(new CustomEvent("gg-shell", { detail: { id: second.id, ok: false, error: "dangerous" } }));
    target.dispatchEvent(new CustomEvent("gg-shell", { detail: { id: first.id, ok: true, result: { token: "t" } } }));
    expect(await session).toEqual({ token: "t" });
    await expect(refused).rejects.toThrow("dangerous");
  });
});
