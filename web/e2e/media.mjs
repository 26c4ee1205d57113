// The web UI's Media view in a real browser (Debian's chromium, driven by playwright-core)
// against a real ggd whose media provider is tests/media-server/server.py (espeak-ng speech,
// PocketSphinx transcription, Pillow images). Started by tests/media.rs.
//   0. A session where the agent called image_generate shows the image in its transcript
//      (media.read)
//   1. Image: a prompt → media.image → the PNG is shown (decoded by the browser, the asked size)
//   2. Speech: a text → media.speak → an <audio> player that loads the WAV (the page's
//      Content-Security-Policy lets it play from a blob: URL and nothing else)
//   3. Transcription: GG_MEDIA_UPLOAD (a WAV) is uploaded → media.transcribe → the transcript
//   4. A file of another type is refused on the page, before anything is sent
// Environment: GG_WEB_URL (with #token=…), GG_MEDIA_UPLOAD, GG_WEB_PROFILE_ROOT, GG_CHROMIUM.
import { chromium } from "playwright-core";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const url = process.env.GG_WEB_URL;
const upload = process.env.GG_MEDIA_UPLOAD;
if (!url || !upload) throw new Error("GG_WEB_URL and GG_MEDIA_UPLOAD are required");

function check(condition, message) {
  if (!condition) throw new Error(`check failed: ${message}`);
}

const profile = mkdtempSync(join(process.env.GG_WEB_PROFILE_ROOT ?? tmpdir(), "gg-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.GG_CHROMIUM ?? "/usr/bin/chromium",
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
});
let failed = false;
try {
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(60_000);
  const problems = [];
  page.on("console", (msg) => {
    if (msg.type() === "error") problems.push(`console: ${msg.text()}`);
  });
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  await page.goto(url);

  // 0. The image the agent generated in a session, in that session's transcript.
  await page.getByRole("button", { name: /draw a fox/ }).first().click();
  await page.waitForFunction(() => {
    const el = document.querySelector('[data-testid="tool-image"] img');
    return el && el.complete && el.naturalWidth === 64 && el.naturalHeight === 48;
  });

  await page.getByRole("button", { name: "Media" }).click();

  // 1. An image, shown from the data the daemon returned.
  const image = page.getByTestId("media-image");
  await image.getByLabel("Prompt").fill("a red fox");
  await image.getByRole("button", { name: "Generate" }).click();
  const img = image.locator("img");
  await img.waitFor();
  await page.waitForFunction(() => {
    const el = document.querySelector('[data-testid="media-image"] img');
    return el && el.complete && el.naturalWidth > 0;
  });
  const size = await img.evaluate((el) => [el.naturalWidth, el.naturalHeight]);
  check(size[0] === 64 && size[1] === 48, `image size ${size}`);

  // 2. Speech: the player loads the audio (its duration is known once the WAV is decoded).
  const speech = page.getByTestId("media-speech");
  await speech.getByLabel("Text").fill("open the pod bay doors");
  await speech.getByRole("button", { name: "Speak" }).click();
  const audio = page.getByTestId("media-audio");
  await audio.waitFor();
  await page.waitForFunction(() => {
    const el = document.querySelector('[data-testid="media-audio"]');
    return el && el.readyState >= 1 && el.duration > 0.3;
  });
  check((await audio.getAttribute("src")).startsWith("blob:"), "audio plays from a blob: URL");

  // 3. An upload, transcribed.
  const transcription = page.getByTestId("media-transcription");
  await transcription.getByLabel("Audio file").setInputFiles(upload);
  const transcript = page.getByTestId("media-transcript");
  await transcript.waitFor();
  const text = (await transcript.innerText()).toLowerCase();
  const heard = ["open", "the", "pod", "bay", "doors"].filter((w) => text.split(/\s+/).includes(w));
  check(heard.length >= 3, `transcript ${JSON.stringify(text)}`);

  // 4. Refused on the page: not audio.
  await transcription.getByLabel("Audio file").setInputFiles({
    name: "notes.txt",
    mimeType: "text/plain",
    buffer: Buffer.from("not audio"),
  });
  await transcription.getByRole("alert").filter({ hasText: 'unsupported audio format ".txt"' }).waitFor();

  check(problems.length === 0, `problems:\n${problems.join("\n")}`);
  console.log("web media e2e: all scenarios passed");
} catch (error) {
  failed = true;
  console.error(error);
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
