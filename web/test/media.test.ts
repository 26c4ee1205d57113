import { describe, expect, it } from "vitest";
import { MAX_UPLOAD_BYTES, base64ToBytes, bytesToBase64, uploadProblem } from "../src/media";

describe("media uploads", () => {
  it("take the transcription endpoint's formats and fit in one ggd message", () => {
    expect(uploadProblem("a.wav", 1000)).toBeNull();
    expect(uploadProblem("A.MP3", MAX_UPLOAD_BYTES)).toBeNull();
    expect(uploadProblem("notes.txt", 10)).toContain('unsupported audio format ".txt"');
    expect(uploadProblem("noext", 10)).toContain("unsupported audio format;");
    expect(uploadProblem("big.wav", MAX_UPLOAD_BYTES + 1)).toContain("at most 3 MiB");
  });

  it("round-trip bytes through base64, large ones too", () => {
    const bytes = new Uint8Array(100_000).map((_, i) => (i * 7) % 256);
    const back = base64ToBytes(bytesToBase64(bytes));
    expect(back).toEqual(bytes);
    expect(bytesToBase64(new TextEncoder().encode("RIFF"))).toBe("UklGRg==");
  });
});

describe("images a tool saved", () => {
  it("stay with their call in a stored transcript", async () => {
    const { fromMessages } = await import("../src/transcript");
    const items = fromMessages(
      [
        { role: "assistant", toolCalls: [{ id: "c1", name: "image_generate", arguments: '{"prompt":"fox"}' }] },
        { role: "tool", toolCallId: "c1", content: "generated 1 image(s)", images: ["/h/.gg/media/images/a.png"] },
        { role: "assistant", toolCalls: [{ id: "c2", name: "read", arguments: "{}" }] },
        { role: "tool", toolCallId: "c2", content: "text" },
      ],
      [],
      "k",
    );
    const tools = items.filter((i) => i.kind === "tool");
    expect(tools.map((t) => (t.kind === "tool" ? t.images : null))).toEqual([["/h/.gg/media/images/a.png"], undefined]);
  });
});
