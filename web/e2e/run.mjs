// End-to-end test of the web UI in a real browser (Debian's chromium, driven by playwright-core)
// against a real ggd and the scripted OpenAI-compatible server. Started by tests/web_e2e.rs,
// which queues the model's replies in the order this script triggers them:
//   1. "say hello" (session A)    -> streamed text
//   2. "make a note" (session A)  -> bash `touch note.txt && echo created-note` (normal: asks)
//   3. "second run" (session B)   -> bash `touch second.txt && echo second-ok` (normal: asks);
//                                    two runs now wait in the queue; a third run is refused
//                                    (ggd has --max-active-runs 2); B's card is answered with
//                                    the keyboard while focused
//   4.                            -> B: write second.md (a diff card; approved for the session)
//   5.                            -> B: text with control and bidi characters (shown escaped);
//                                    B is renamed, and forked from its tree
//   6. A's card approved          -> bash `curl … | sh` (dangerous: asks, no session approval);
//                                    the run is steered and given a follow-up, then denied with
//                                    the keyboard
//   7.                            -> A: text after the denial
//   8.                            -> A: the follow-up turn's text
//   9. "count slowly"             -> slow streamed text; the page is reloaded in the middle
//  10. "print many lines"         -> bash `seq 1 30000` (read-only: runs; output truncated)
//  11.                            -> text; the full log is opened from the tool card
//  12. "wait here"                -> text that streams, then stalls: layout shift is measured,
//                                    and the run is canceled
//  13. "check the network"        -> text, after the settings chose sandbox on + allow-list
//  14. a scheduled job            -> text
// Environment: GG_WEB_URL (with #token=…), GG_WEB_ARTIFACTS (screenshots), GG_CHROMIUM.
import { chromium } from "playwright-core";
import { readFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";

const url = process.env.GG_WEB_URL;
const artifacts = process.env.GG_WEB_ARTIFACTS ?? "e2e/artifacts";
const executablePath = process.env.GG_CHROMIUM ?? "/usr/bin/chromium";
if (!url) throw new Error("GG_WEB_URL is required");
mkdirSync(artifacts, { recursive: true });
const token = new URL(url).hash.replace(/^#token=/, "");
const origin = new URL(url).origin;

const STEP_TIMEOUT = 60_000;
const require = createRequire(import.meta.url);
const axeSource = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");

function check(condition, message) {
  if (!condition) throw new Error(`check failed: ${message}`);
}

const profile = mkdtempSync(join(process.env.GG_WEB_PROFILE_ROOT ?? tmpdir(), "gg-chromium-"));
// A fresh profile directory (--user-data-dir) for every run.
const context = await chromium.launchPersistentContext(profile, {
  executablePath,
  headless: true,
  viewport: { width: 1200, height: 850 },
  colorScheme: "light",
  acceptDownloads: true,
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
});
let failed = false;
try {
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(STEP_TIMEOUT);
  const problems = [];
  page.on("console", (msg) => {
    if (msg.type() === "error") problems.push(`console: ${msg.text()}`);
  });
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  // The token may travel only in the Authorization header: never in a URL or a Referer.
  page.on("request", (request) => {
    if (request.url().includes(token)) problems.push(`token in a request URL: ${request.url()}`);
    const referer = request.headers()["referer"];
    if (referer) problems.push(`Referer sent: ${referer}`);
    if (!request.url().startsWith(origin) && !request.url().startsWith("blob:") && !request.url().startsWith("data:"))
      problems.push(`request to another origin: ${request.url()}`);
  });

  const shot = (name) => page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: false });

  // --- open with the token URL; the token leaves the address bar ----------------------------
  await page.goto(url);
  await page.getByRole("button", { name: "New session" }).waitFor();
  check(!page.url().includes("token"), `token still in the address bar: ${page.url()}`);
  check(!(await page.evaluate(() => window.location.hash)), "fragment not cleared");
  check((await page.evaluate(() => window.history.length)) >= 1, "history");

  // --- start a run and see streamed text -----------------------------------------------------
  await page.getByRole("button", { name: "New session" }).click();
  const prompt = page.getByRole("textbox", { name: "Prompt" });
  await prompt.fill("say hello");
  await page.getByRole("button", { name: "Send" }).click();
  await page.getByTestId("assistant-message").filter({ hasText: "Hello from gg!" }).waitFor();
  await page.locator(".md pre.code", { hasText: "echo hi" }).waitFor();
  await page.getByRole("button", { name: "Send" }).waitFor(); // the run ended
  await shot("01-transcript");

  // --- a normal command asks -> Approve -> its output appears --------------------------------
  await prompt.fill("make a note");
  await page.getByRole("button", { name: "Send" }).click();
  const card = page.getByTestId("approval").first();
  await card.filter({ hasText: "touch note.txt" }).waitFor();
  check(await card.getByRole("button", { name: /Approve for session/ }).isVisible(), "session approval offered for a normal call");
  check((await card.locator("mark").count()) > 0, "the reason's span is highlighted in the command");
  await shot("02-approval-normal");

  // --- a second run in another session asks too: two approvals queued, each answerable -------
  await page.getByRole("button", { name: "New session" }).click();
  await page.getByRole("textbox", { name: "Prompt" }).fill("second run");
  await page.getByRole("button", { name: "Send" }).click();
  const cardA = page.getByTestId("approval").filter({ hasText: "touch note.txt" });
  const cardB = page.getByTestId("approval").filter({ hasText: "touch second.txt" });
  await cardB.waitFor();
  await page.getByRole("heading", { name: /^2 pending approvals/ }).waitFor();
  check((await page.getByTestId("approval").count()) === 2, "both runs' approvals are queued");
  check(await cardA.isVisible(), "the first run's approval is still shown");
  check((await cardB.locator(".run-prompt").innerText()).includes("second run"), "the card names its run");
  await shot("02b-approval-queue");

  // --- ggd runs with --max-active-runs 2: a third run is refused, plainly, the draft kept -----
  await page.getByRole("button", { name: "New session" }).click();
  await page.getByRole("textbox", { name: "Prompt" }).fill("a third run");
  await page.getByRole("button", { name: "Send" }).click();
  await page.getByTestId("error").filter({ hasText: "The run limit is reached" }).waitFor();
  check((await page.getByRole("textbox", { name: "Prompt" }).inputValue()) === "a third run", "draft lost after the refusal");
  await shot("03b-run-limit");

  // --- B's card, focused, takes the key: y approves B, not the first card (A) ------------------
  await cardB.getByRole("button", { name: /^session / }).click();
  await page.getByTestId("user-message").filter({ hasText: "second run" }).waitFor();
  await cardB.focus();
  await cardB.locator("kbd", { hasText: "y" }).waitFor(); // the key hints moved to the focused card
  await page.keyboard.press("y");
  await page.getByTestId("tool-output").filter({ hasText: "second-ok" }).waitFor();

  // --- B writes a file: the card shows a coloured diff; approved for the session ---------------
  const cardW = page.getByTestId("approval").filter({ hasText: "second.md" });
  await cardW.waitFor();
  await cardW.locator(".diff .add", { hasText: "+# Second" }).waitFor();
  check(await cardA.isVisible(), "A's approval is still pending");
  await shot("02c-approval-diff");
  await cardW.getByRole("button", { name: /^Approve for session/ }).click();

  // --- control and bidi characters in model text are shown escaped ----------------------------
  const done = page.getByTestId("assistant-message").filter({ hasText: "second done" });
  await done.waitFor();
  await page.getByRole("button", { name: "Send" }).waitFor(); // B's run ended
  const escapes = await done.locator(".esc").allInnerTexts();
  check(escapes.includes("\\x1b") && escapes.includes("\\u{202e}"), `escapes shown: ${JSON.stringify(escapes)}`);
  check(!(await done.innerText()).includes("\u202e"), "a raw bidi override reached the page");
  check((await page.getByTestId("approval").count()) === 1, "only A's approval is left");

  // --- rename B (the browser's prompt dialog), then fork it from its first user message --------
  page.once("dialog", (dialog) => void dialog.accept("second-renamed"));
  await page.getByRole("button", { name: "Rename" }).click();
  await page.getByRole("heading", { name: "second-renamed" }).waitFor();
  await page.getByRole("button", { name: "Tree" }).click();
  const tree = page.getByRole("list", { name: "Session tree" });
  await tree.locator("li", { hasText: "second run" }).getByRole("button", { name: "Fork" }).click();
  await page.getByRole("status").filter({ hasText: /^forked to / }).waitFor();
  check((await page.getByRole("textbox", { name: "Prompt" }).inputValue()) === "second run", "the fork's draft is the forked message");
  check(!(await page.getByRole("heading", { name: "second-renamed" }).isVisible()), "the fork is a new session");
  await page.getByRole("textbox", { name: "Prompt" }).fill("");

  // --- A's card: Approve (clicked) -> its output appears in A ---------------------------------
  await cardA.getByRole("button", { name: /^session / }).click();
  await page.getByTestId("user-message").filter({ hasText: "make a note" }).waitFor();
  await cardA.getByRole("button", { name: /^Approve/ }).first().click();
  await page.getByTestId("tool-output").filter({ hasText: "created-note" }).waitFor();
  await page.getByTestId("tool-call").filter({ hasText: "created-note" }).getByText("exit 0").waitFor();

  // --- a dangerous one: no session approval -> Deny (with the keyboard) ----------------------
  const danger = page.getByTestId("approval").filter({ hasText: "example.com/x.sh" });
  await danger.waitFor();
  check(await danger.locator(".badge.dangerous").isVisible(), "dangerous badge");
  check((await danger.getByRole("button", { name: /Approve for session/ }).count()) === 0, "session approval offered for a dangerous call");
  await shot("03-approval-dangerous");

  // --- steer the waiting run, then deny with the keyboard (the only card: the first) ----------
  const steer = page.getByRole("textbox", { name: "Steer the running turn" });
  await steer.fill("also be brief");
  await page.getByRole("button", { name: "Steer", exact: true }).click();
  await steer.fill("then summarise");
  await page.getByRole("button", { name: "Follow-up", exact: true }).click();
  await page.getByRole("status").filter({ hasText: "Follow-up queued" }).waitFor();
  await page.locator("body").click({ position: { x: 5, y: 5 } });
  await page.keyboard.press("n");
  await page.getByTestId("tool-call").filter({ hasText: "example.com/x.sh" }).locator(".decision.deny").waitFor();
  await page.getByTestId("assistant-message").filter({ hasText: "The download was denied" }).waitFor();
  await page.getByTestId("user-message").filter({ hasText: "also be brief" }).waitFor();
  // The follow-up became a further turn of the same run.
  await page.getByTestId("user-message").filter({ hasText: "then summarise" }).waitFor();
  await page.getByTestId("assistant-message").filter({ hasText: "summary done" }).waitFor();
  await page.getByRole("button", { name: "Send" }).waitFor();
  await page.getByTestId("tool-call").filter({ hasText: "example.com/x.sh" }).locator(".decision.deny", { hasText: "denied by you" }).waitFor();
  await shot("04-tool-calls");

  // --- reload mid-stream: the stream resumes without losing or repeating text ----------------
  await prompt.fill("count slowly");
  await page.getByRole("button", { name: "Send" }).click();
  await page.getByTestId("assistant-message").filter({ hasText: "tick 3" }).waitFor();
  await page.reload();
  check(!page.url().includes("token"), "token back in the address bar after reload");
  // The reloaded tab reopens its session and reattaches to the running stream.
  await page.getByTestId("assistant-message").filter({ hasText: "tick 12 done" }).waitFor();
  const streamed = await page.getByTestId("assistant-message").filter({ hasText: "tick 12 done" }).innerText();
  const expected = Array.from({ length: 11 }, (_, i) => `tick ${i + 1}`).join(" ") + " tick 12 done";
  check(streamed.replace(/\s+/g, " ").trim() === expected, `resumed stream text: ${JSON.stringify(streamed)}`);
  check(!page.url().includes("token"), "token back in the address bar after reload");
  await page.getByRole("button", { name: "Send" }).waitFor(); // the run ended

  // --- a long output is shown collapsed; "Full log" opens the whole saved log ------------------
  await prompt.fill("print many lines");
  await page.getByRole("button", { name: "Send" }).click();
  await page.getByTestId("assistant-message").filter({ hasText: "printed all lines" }).waitFor();
  await page.getByRole("button", { name: "Send" }).waitFor();
  const seqCall = page.getByTestId("tool-call").filter({ hasText: "seq 1 30000" });
  const preview = await seqCall.getByTestId("tool-output").innerText();
  check(preview.includes("output truncated") && !/^1\n2\n3\n/m.test(preview), `collapsed output: ${preview.slice(0, 200)}`);
  await seqCall.getByRole("button", { name: "Full log" }).click();
  const fullLog = seqCall.getByTestId("full-log");
  await fullLog.waitFor();
  const fullText = await fullLog.evaluate((el) => el.textContent ?? "");
  const want = Array.from({ length: 30000 }, (_, i) => `${i + 1}\n`).join("");
  check(fullText === want, `full log: ${fullText.length} characters, starts ${JSON.stringify(fullText.slice(0, 20))}`);
  await seqCall.getByRole("button", { name: "Download" }).waitFor();
  await shot("04b-full-log");
  await seqCall.getByRole("button", { name: "Hide full log" }).click();

  // --- streaming text shifts nothing on the page; Cancel stops a run that would never end ------
  await page.evaluate(() => {
    window.__shift = 0;
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) if (!entry.hadRecentInput) window.__shift += entry.value;
    }).observe({ type: "layout-shift" });
  });
  await prompt.fill("wait here");
  await page.getByRole("button", { name: "Send" }).click();
  await page.getByTestId("assistant-message").filter({ hasText: "w8" }).waitFor();
  const shift = await page.evaluate(() => window.__shift);
  console.log(`layout shift while text streamed: ${shift.toFixed(4)}`);
  check(shift < 0.01, `layout shift while streaming: ${shift}`);
  // The measurement itself works: a block pushed in above the transcript is seen as a shift.
  await page.evaluate(() => {
    const block = document.createElement("div");
    block.id = "shift-probe";
    block.style.height = "120px";
    document.querySelector(".open-session")?.prepend(block);
  });
  await page.waitForFunction(() => window.__shift > 0);
  await page.evaluate(() => document.getElementById("shift-probe")?.remove());
  await page.getByRole("button", { name: "Cancel run" }).click();
  await page.getByTestId("notice").filter({ hasText: "Run canceled." }).waitFor();
  await page.getByRole("button", { name: "Send" }).waitFor();

  // --- the audit view: both runs' approvals (answered here) and the denial --------------------
  await page.getByRole("button", { name: "Audit" }).click();
  const table = page.getByTestId("audit-table");
  await table.locator("tr", { hasText: "example.com/x.sh" }).waitFor();
  const deniedRow = await table.locator("tr", { hasText: "example.com/x.sh" }).innerText();
  check(/deny/.test(deniedRow) && /dangerous/.test(deniedRow) && /user/.test(deniedRow), `audit row: ${deniedRow}`);
  for (const command of ["touch note.txt", "touch second.txt"]) {
    const row = await table.locator("tr", { hasText: command }).innerText();
    check(/allow/.test(row) && /user/.test(row), `audit row of ${command}: ${row}`);
  }
  await shot("05-audit");
  await page.getByLabel("Filter by class").selectOption("dangerous");
  await table.locator("tbody tr").first().waitFor();
  check((await table.locator("tbody tr").count()) === 1, "class filter keeps only the dangerous call");
  await page.getByLabel("Filter by class").selectOption("all");
  await page.getByLabel("Filter by decision").selectOption("deny");
  check((await table.locator("tbody tr").count()) === 1, "decision filter keeps only the denial");
  const download = page.waitForEvent("download");
  await page.getByRole("button", { name: "Export JSON" }).click();
  const exported = JSON.parse(readFileSync(await (await download).path(), "utf8"));
  check(exported.length === 1 && exported[0].audit.decision.action === "deny", "exported JSON");

  // --- settings: sandbox on, network allow-list with one more host; a new run gets them -------
  await page.getByRole("button", { name: "Settings" }).click();
  await page.getByText("Settings for new runs").waitFor();
  await page.getByRole("radio", { name: /^On: bash runs in the sandbox/ }).check();
  await page.getByRole("radio", { name: /^Allow-list/ }).check();
  await page.getByRole("textbox", { name: /Further hosts/ }).fill("example.org");
  await page.getByTestId("run-settings").filter({ hasText: "network allow-list +example.org" }).waitFor();
  // The Google connector (no OAuth client configured for this ggd): its state, sign-in disabled.
  await page.getByTestId("google-status").filter({ hasText: "Not signed in" }).waitFor();
  check(await page.getByRole("button", { name: "Sign in to Google" }).isDisabled(), "sign-in disabled without a client");
  await shot("07-settings");
  await page.getByRole("button", { name: "Sessions" }).click();
  await page.getByTestId("composer-settings").filter({ hasText: "sandbox on · network allow-list +example.org" }).waitFor();
  await prompt.fill("check the network");
  await page.getByRole("button", { name: "Send" }).click();
  await page.getByTestId("assistant-message").filter({ hasText: "network noted" }).waitFor();
  await page.getByRole("button", { name: "Send" }).waitFor();

  // --- jobs: add one that fires in 1s and see its run -----------------------------------------
  await page.getByRole("button", { name: "Jobs" }).click();
  await page.getByLabel("Name").fill("nightly-check");
  await page.getByLabel("Prompt").fill("check the build");
  await page.getByLabel("Schedule").fill("1s");
  await page.getByRole("button", { name: "Add job" }).click();
  await page.getByTestId("job").filter({ hasText: "nightly-check" }).waitFor();
  await page.getByTestId("job-runs").locator("td.status.ok").waitFor({ timeout: 90_000 });
  await shot("06-jobs");
  // A cron job: paused, resumed, removed.
  await page.getByLabel("Name").fill("weekly-report");
  await page.getByLabel("Prompt").fill("write the weekly report");
  await page.getByLabel("When").selectOption("cron");
  await page.getByLabel("Schedule").fill("0 9 * * 1");
  await page.getByRole("button", { name: "Add job" }).click();
  const weekly = page.getByTestId("job").filter({ hasText: "weekly-report" });
  await weekly.locator(".badge", { hasText: "active" }).waitFor();
  await weekly.getByRole("button", { name: "Pause" }).click();
  await weekly.locator(".badge", { hasText: "paused" }).waitFor();
  await weekly.getByRole("button", { name: "Resume" }).click();
  await weekly.locator(".badge", { hasText: "active" }).waitFor();
  await weekly.getByRole("button", { name: "Remove" }).click();
  await weekly.waitFor({ state: "detached" });

  // --- a 10,000-entry session: the newest page first, older pages as the reader scrolls up ----
  await page.getByRole("button", { name: "Sessions" }).click();
  const rpcRequests = [];
  const recordRpc = (request) => {
    if (request.method() === "POST" && new URL(request.url()).pathname === "/rpc") rpcRequests.push(request);
  };
  const rpcMethod = (request) => JSON.parse(request.postData() ?? "{}").method;
  page.on("request", recordRpc);
  // Chromium's own clock: the click event's timeStamp and the app's mark are on one timeline.
  await page.evaluate(() => {
    document.addEventListener("click", (e) => (window.ggClickAt = e.timeStamp), { capture: true, once: true });
  });
  await page.getByRole("button", { name: /^big/ }).click();
  await page.getByTestId("assistant-message").filter({ hasText: "answer 9999" }).waitFor();
  // The mark of this session's transcript (the session shown before, still selected, marked too).
  const openMs = await (
    await page.waitForFunction(() => {
      const shown = performance.getEntriesByName("gg:transcript-shown").find((m) => m.startTime > window.ggClickAt);
      return shown && shown.startTime - window.ggClickAt;
    })
  ).jsonValue();
  const rendered = await page.locator(".row-item").count();
  check(rendered < 80, `virtualized transcript rendered ${rendered} rows`);
  // One page was asked for and sent: the newest 100 messages, with a cursor to older ones.
  const opens = rpcRequests.filter((r) => rpcMethod(r) === "session.open");
  check(opens.length === 1, `${opens.length} session.open requests`);
  check(JSON.parse(opens[0].postData()).params.limit === 100, "session.open without a page limit");
  const first = (await (await opens[0].response()).json()).result;
  check(
    first.messages.length === 100 && first.firstMessage === 9900 && first.before !== null,
    `first page: ${first.messages.length} messages from ${first.firstMessage}`,
  );
  const wholeReads = rpcRequests.filter((r) => ["session.entries", "audit.list"].includes(rpcMethod(r)));
  check(wholeReads.length === 0, `opening also asked for ${wholeReads.map(rpcMethod)}`);
  // Scrolling to the top fetches the page before; what the reader was looking at stays put.
  const transcript = page.getByTestId("transcript");
  const anchor = page.getByTestId("user-message").filter({ hasText: /^question 9900$/ });
  const olderPage = page.waitForResponse(
    (r) => new URL(r.url()).pathname === "/rpc" && rpcMethod(r.request()) === "session.entries",
  );
  await transcript.evaluate((el) => (el.scrollTop = 0));
  const older = (await (await olderPage).json()).result;
  check(older.messages.length === 100 && older.firstMessage === 9800, `older page from ${older.firstMessage}`);
  await page.waitForFunction(() => document.querySelector('[data-testid="transcript"]').scrollTop > 1000);
  const box = await transcript.boundingBox();
  const seen = await anchor.boundingBox();
  check(
    seen && seen.y >= box.y - 1 && seen.y < box.y + box.height,
    `the message at the top moved out of view when the older page came (${JSON.stringify(seen)})`,
  );
  await transcript.evaluate((el) => (el.scrollTop = 0));
  await page.getByTestId("user-message").filter({ hasText: /^question 9800$/ }).waitFor();
  page.off("request", recordRpc);
  console.log(
    `10,000-entry session: first screen ${openMs.toFixed(1)} ms after the click (Chromium's clock), ` +
      `${rendered} rows in the DOM, ${rpcRequests.length} RPCs`,
  );
  await shot("09-big-session");

  // --- the MCP view renders ---------------------------------------------------------------------
  await page.getByRole("button", { name: "MCP" }).click();
  await page.getByRole("heading", { name: "MCP servers" }).waitFor();

  // --- knowledge, read-only: the memory entry the test added through ggd, and the stores ----
  await page.getByRole("button", { name: "Knowledge" }).click();
  await page.getByTestId("memory-entry").filter({ hasText: "prefers short answers" }).waitFor();
  for (const part of ["kbs", "artifacts", "library"])
    await page.getByTestId(part).locator("p, table, ul").first().waitFor();
  await shot("10-knowledge");

  // --- accessibility: no critical axe violations on the main views ----------------------------
  await page.evaluate(axeSource);
  // Each view, once what it loads is on the page.
  const loaded = {
    Sessions: () => page.getByRole("button", { name: "New session" }).waitFor(),
    Audit: () => page.getByTestId("audit-table").locator("tbody tr").first().waitFor(),
    Jobs: () => page.getByTestId("job").first().waitFor(),
    Settings: () => page.getByText(/^ggd: at most/).waitFor(),
    Knowledge: () => page.getByTestId("memory-entry").first().waitFor(),
  };
  for (const view of ["Sessions", "Audit", "Jobs", "Knowledge", "Settings"]) {
    await page.getByRole("button", { name: view, exact: true }).click();
    await loaded[view]();
    const result = await page.evaluate(async () => {
      // eslint-disable-next-line no-undef
      const r = await window.axe.run(document, { resultTypes: ["violations"] });
      return r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length }));
    });
    // The requirement is no critical violation; serious ones fail the suite too.
    const critical = result.filter((v) => v.impact === "critical" || v.impact === "serious");
    if (result.length) console.log(`axe ${view}: ${JSON.stringify(result)}`);
    check(critical.length === 0, `critical axe violations on ${view}: ${JSON.stringify(critical)}`);
  }

  // --- 360 px wide, dark theme -----------------------------------------------------------------
  const small = await context.newPage();
  await small.setViewportSize({ width: 360, height: 740 });
  await small.emulateMedia({ colorScheme: "dark" });
  small.on("pageerror", (error) => problems.push(`page error (narrow): ${error.message}`));
  await small.goto(url);
  await small.getByRole("button", { name: "New session" }).waitFor();
  await small.getByRole("button", { name: /say hello|messages/ }).first().click();
  await small.getByTestId("transcript").waitFor();
  const overflow = await small.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check(overflow <= 0, `horizontal overflow at 360 px: ${overflow}px`);
  await small.screenshot({ path: join(artifacts, "08-narrow-dark.png") });
  for (const view of ["Settings", "Audit", "Knowledge", "Jobs"]) {
    await small.getByRole("button", { name: view, exact: true }).click();
    await small.locator(`section[aria-label="${view}"]`).waitFor();
    const wide = await small.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    check(wide <= 0, `horizontal overflow at 360 px in ${view}: ${wide}px`);
  }
  await small.screenshot({ path: join(artifacts, "08b-narrow-dark-jobs.png") });
  await small.close();

  // Ignore the browser's own noise about a missing favicon.
  const real = problems.filter((p) => !/favicon/.test(p));
  check(real.length === 0, `problems:\n${real.join("\n")}`);
  console.log("web e2e: all scenarios passed");
} catch (error) {
  failed = true;
  console.error(error);
  // What the page showed when the step failed, next to the other screenshots.
  for (const [i, p] of context.pages().entries())
    await p.screenshot({ path: join(artifacts, `failure-${i}.png`) }).catch(() => {});
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
