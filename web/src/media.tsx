// Media: generate an image, hear a text spoken, transcribe an uploaded recording, through ggd's
// media.image / media.speak / media.transcribe (the daemon's media configuration decides where
// each goes and each costs money at that provider). Images are shown from the data the daemon
// returns (data: URLs, which the page's policy allows for images); audio plays from a blob: URL.
// Transcripts come from a model: text, escaped, never HTML.
import { useEffect, useState } from "react";
import { describeError, rpc } from "./api";
import { Safe } from "./escape";

/** ggd takes messages of at most 4 MiB; base64 makes the audio a third bigger. */
export const MAX_UPLOAD_BYTES = 3 * 1024 * 1024;

/** The audio file types the transcription endpoint takes. */
export const AUDIO_EXTENSIONS = ["flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "ogg", "wav", "webm"];

/** Why a file cannot be sent for transcription, or null when it can. */
export function uploadProblem(name: string, size: number): string | null {
  const ext = name.includes(".") ? name.slice(name.lastIndexOf(".") + 1).toLowerCase() : "";
  if (!AUDIO_EXTENSIONS.includes(ext)) {
    return `unsupported audio format${ext ? ` ".${ext}"` : ""}; the transcription endpoint takes ${AUDIO_EXTENSIONS.join(", ")}`;
  }
  if (size > MAX_UPLOAD_BYTES) {
    return `${name} is ${(size / 1024 / 1024).toFixed(1)} MiB; uploads here take at most 3 MiB (use gg media transcribe for files up to 25 MiB)`;
  }
  return null;
}

export function bytesToBase64(bytes: Uint8Array): string {
  let binary = "";
  const chunk = 0x8000;
  for (let i = 0; i < bytes.length; i += chunk) {
    binary += String.fromCharCode(...bytes.subarray(i, i + chunk));
  }
  return btoa(binary);
}

export function base64ToBytes(data: string): Uint8Array {
  const binary = atob(data);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

const AUDIO_TYPES: Record<string, string> = {
  mp3: "audio/mpeg",
  opus: "audio/ogg",
  aac: "audio/aac",
  flac: "audio/flac",
  wav: "audio/wav",
  pcm: "audio/L16",
};

interface Image {
  path: string;
  mimeType: string;
  data: string;
  width?: number;
  height?: number;
}

type Status = { state: "idle" } | { state: "busy" } | { state: "error"; message: string };

function StatusLine({ status }: { status: Status }) {
  if (status.state === "busy") return <p className="meta">Working…</p>;
  if (status.state === "error")
    return (
      <p className="error" role="alert">
        <Safe text={status.message} />
      </p>
    );
  return null;
}

function ImagePart() {
  const [prompt, setPrompt] = useState("");
  const [status, setStatus] = useState<Status>({ state: "idle" });
  const [images, setImages] = useState<Image[]>([]);
  const generate = () => {
    setStatus({ state: "busy" });
    rpc<{ images: Image[] }>("media.image", { prompt }).then(
      (r) => {
        setImages(r.images);
        setStatus({ state: "idle" });
      },
      (e) => setStatus({ state: "error", message: describeError(e) }),
    );
  };
  return (
    <section className="knowledge-part" aria-label="Image" data-testid="media-image">
      <h3>Image</h3>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (prompt.trim()) generate();
        }}
      >
        <label>
          Prompt <input value={prompt} onChange={(e) => setPrompt(e.target.value)} />
        </label>{" "}
        <button type="submit" disabled={status.state === "busy" || !prompt.trim()}>
          Generate
        </button>
      </form>
      <StatusLine status={status} />
      {images.map((img) => (
        <figure key={img.path} className="media-image">
          <img src={`data:${img.mimeType};base64,${img.data}`} alt={`generated: ${prompt}`} />
          <figcaption className="meta">
            <Safe text={img.path} />
            {img.width && img.height ? ` · ${img.width}x${img.height}` : ""}
          </figcaption>
        </figure>
      ))}
    </section>
  );
}

function SpeechPart() {
  const [text, setText] = useState("");
  const [status, setStatus] = useState<Status>({ state: "idle" });
  const [audio, setAudio] = useState<{ url: string; path: string; durationMs?: number } | null>(null);
  // A blob: URL holds its bytes until revoked.
  useEffect(() => () => {
    if (audio) URL.revokeObjectURL(audio.url);
  }, [audio]);
  const speak = () => {
    setStatus({ state: "busy" });
    rpc<{ path: string; format: string; data: string; durationMs?: number }>("media.speak", { text }).then(
      (r) => {
        const blob = new Blob([base64ToBytes(r.data) as BlobPart], { type: AUDIO_TYPES[r.format] ?? "audio/mpeg" });
        setAudio({ url: URL.createObjectURL(blob), path: r.path, durationMs: r.durationMs });
        setStatus({ state: "idle" });
      },
      (e) => setStatus({ state: "error", message: describeError(e) }),
    );
  };
  return (
    <section className="knowledge-part" aria-label="Speech" data-testid="media-speech">
      <h3>Speech</h3>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (text.trim()) speak();
        }}
      >
        <label>
          Text <input value={text} onChange={(e) => setText(e.target.value)} />
        </label>{" "}
        <button type="submit" disabled={status.state === "busy" || !text.trim()}>
          Speak
        </button>
      </form>
      <StatusLine status={status} />
      {audio && (
        <p>
          <audio controls src={audio.url} data-testid="media-audio" />
          <span className="meta">
            {" "}
            <Safe text={audio.path} />
            {audio.durationMs !== undefined ? ` · ${(audio.durationMs / 1000).toFixed(1)} s` : ""}
          </span>
        </p>
      )}
    </section>
  );
}

function TranscriptionPart() {
  const [status, setStatus] = useState<Status>({ state: "idle" });
  const [transcript, setTranscript] = useState<{ name: string; text: string } | null>(null);
  const upload = async (file: File) => {
    const problem = uploadProblem(file.name, file.size);
    if (problem) {
      setStatus({ state: "error", message: problem });
      return;
    }
    setStatus({ state: "busy" });
    try {
      const data = bytesToBase64(new Uint8Array(await file.arrayBuffer()));
      const r = await rpc<{ text: string }>("media.transcribe", { data, fileName: file.name });
      setTranscript({ name: file.name, text: r.text });
      setStatus({ state: "idle" });
    } catch (e) {
      setStatus({ state: "error", message: describeError(e) });
    }
  };
  return (
    <section className="knowledge-part" aria-label="Transcription" data-testid="media-transcription">
      <h3>Transcription</h3>
      <label>
        Audio file{" "}
        <input
          type="file"
          accept={AUDIO_EXTENSIONS.map((e) => `.${e}`).join(",")}
          disabled={status.state === "busy"}
          onChange={(e) => {
            const file = e.target.files?.[0];
            if (file) void upload(file);
          }}
        />
      </label>
      <StatusLine status={status} />
      {transcript && (
        <blockquote data-testid="media-transcript">
          <p className="meta">
            <Safe text={transcript.name} />
          </p>
          <Safe text={transcript.text} />
        </blockquote>
      )}
    </section>
  );
}

export function MediaView() {
  return (
    <section className="knowledge" aria-label="Media">
      <h2>Media</h2>
      <p className="meta">
        Each request goes to the media provider ggd is configured with (<code>media</code> in config.json) and costs
        money there. Outputs are kept under <code>~/.gg/media</code>.
      </p>
      <ImagePart />
      <SpeechPart />
      <TranscriptionPart />
    </section>
  );
}
