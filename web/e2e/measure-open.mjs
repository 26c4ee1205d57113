// Time to the first screen of a large session, with Chromium's own clock: from the click on the
// session in the list (the click event's timeStamp) to the frame after the newest message is in
// the page (a MutationObserver sees it, a requestAnimationFrame callback reads performance.now()).
// The same observer times any bundle, so two bundles can be measured side by side against one
// ggd: the one ggd serves, and GG_WEB_BEFORE_BUNDLE (an app.js, e.g. from an earlier commit),
// served in its place by the browser for the alternate runs. Started by the ignored test
// `web_e2e::first_screen_timing`, which makes the session and the daemon.
// Environment: GG_WEB_URL (with #token=…), GG_CHROMIUM, GG_WEB_RUNS (per bundle, default 7),
// GG_WEB_SESSION (the session's name in the list), GG_WEB_NEWEST (text of its newest message),
// GG_WEB_BEFORE_BUNDLE (optional).
import { chromium } from "playwright-core";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const url = process.env.GG_WEB_URL;
if (!url) throw new Error("GG_WEB_URL is required");
const runs = Number(process.env.GG_WEB_RUNS ?? "7");
const sessionName = process.env.GG_WEB_SESSION ?? "big";
const newest = process.env.GG_WEB_NEWEST ?? "answer 9999";
const beforeBundle = process.env.GG_WEB_BEFORE_BUNDLE;
const bundles = [["this build", null]];
if (beforeBundle) bundles.unshift(["before", readFileSync(beforeBundle)]);

const profile = mkdtempSync(join(process.env.GG_WEB_PROFILE_ROOT ?? tmpdir(), "gg-measure-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.GG_CHROMIUM ?? "/usr/bin/chromium",
  headless: true,
  viewport: { width: 1200, height: 850 },
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic"],
});

async function once(bundle) {
  const page = await context.newPage();
  if (bundle) {
    await page.route("**/assets/app.js", (route) =>
      route.fulfill({ status: 200, contentType: "text/javascript; charset=utf-8", body: bundle }),
    );
  }
  await page.addInitScript(
    ({ newest }) => {
      const observer = new MutationObserver(() => {
        if (window.ggClickAt === undefined || window.ggShownAt !== undefined) return;
        for (const el of document.querySelectorAll('[data-testid="assistant-message"]')) {
          if (el.textContent.includes(newest)) {
            window.ggShownAt = -1;
            requestAnimationFrame(() => (window.ggShownAt = performance.now()));
            return;
          }
        }
      });
      document.addEventListener("DOMContentLoaded", () =>
        observer.observe(document.body, { childList: true, subtree: true, characterData: true }),
      );
    },
    { newest },
  );
  await page.goto(url);
  const button = page.getByRole("button", { name: new RegExp(`^${sessionName}`) });
  await button.waitFor({ timeout: 120_000 });
  await page.evaluate(() =>
    document.addEventListener("click", (e) => (window.ggClickAt = e.timeStamp), { capture: true, once: true }),
  );
  await button.click();
  await page.waitForFunction(() => window.ggShownAt > 0, null, { timeout: 120_000 });
  const ms = await page.evaluate(() => window.ggShownAt - window.ggClickAt);
  await page.close();
  return ms;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const times = new Map(bundles.map(([name]) => [name, []]));
try {
  // Interleaved, so that the machine's load falls on both alike.
  for (let i = 0; i < runs; i++)
    for (const [name, bundle] of bundles) times.get(name).push(await once(bundle));
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
for (const [name, ms] of times)
  console.log(
    `first screen, ${name}: median ${median(ms).toFixed(0)} ms over ${ms.length} runs ` +
      `(min ${Math.min(...ms).toFixed(0)}, max ${Math.max(...ms).toFixed(0)}): ${ms.map((m) => m.toFixed(0)).join(" ")}`,
  );
