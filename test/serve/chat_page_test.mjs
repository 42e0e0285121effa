// The chat page at / (kern-run/serve/chat_page.html) in headless Chromium
// (Debian's chromium driven by npm playwright-core, .cache/serve): type a
// prompt, see the answer stream in (the text grows over several steps) and
// end with its finish reason; the final text equals the same request sent to
// the API. Then Stop mid-answer: the page says "stopped" and the server
// frees the sequence. The test waits on the page's and the server's states,
// never on a time: the page's texts are recorded by a MutationObserver (every
// text the page shows, not the ones a poll happens to see), and the answer
// to stop has 900 tokens (36 s of 40 ms steps at least), so it cannot end
// before Stop on a loaded machine. Exit 77 (skip) with the reason when
// chromium or playwright-core is missing.
// usage: node chat_page_test.mjs KERN_RUN PLAN WEIGHTS TOKENIZER NPM_DIR
import { existsSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

import { ServerProcess, parseMetrics, metric, until } from "./server_process.mjs";

const [kernRun, plan, weights, tokenizer, npmDir] = process.argv.slice(2);
const pwEntry = path.join(npmDir, "node_modules", "playwright-core", "index.mjs");
const chromiumPath = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => existsSync(p));
if (!existsSync(pwEntry)) {
  console.log(`SKIP: playwright-core is not installed at ${npmDir} (scripts/setup.sh installs it)`);
  process.exit(77);
}
if (!chromiumPath) {
  console.log("SKIP: chromium is not installed (Debian package chromium; scripts/setup.sh installs it)");
  process.exit(77);
}
if (!existsSync(tokenizer)) {
  console.log(`SKIP: Qwen3's tokenizer.json is not at ${tokenizer} (scripts/setup.sh installs it)`);
  process.exit(77);
}
const { chromium } = await import(pathToFileURL(pwEntry).href);

function assert(cond, message) {
  if (!cond) throw new Error(message);
}

// Slow steps (a test hook) so the stream is seen growing.
const server = new ServerProcess(kernRun, [plan, "--weights", weights, "--tokenizer", tokenizer, "--device", "cpu"],
                                 { KERN_SERVE_TEST_STEP_DELAY_MS: "40" });
let browser;
let failed = false;
const timer = setTimeout(() => { console.log("FAIL: timed out after 240 s"); process.exit(1); }, 240000);
try {
  await server.start();
  await server.waitReady();
  browser = await chromium.launch({ executablePath: chromiumPath, args: ["--no-sandbox", "--disable-gpu"] });
  const page = await browser.newPage();
  await page.goto(server.url + "/");
  assert((await page.title()) === "kern chat", "page title");

  // 1. Type a prompt and watch the answer stream in: every text an answer
  // element is given is recorded in the page (was: sampled by polling every
  // 10 ms, which a loaded machine could make see fewer than 3).
  await page.evaluate(() => {
    window.answerTexts = [];
    new MutationObserver((records) => {
      for (const r of records)
        if (r.target.classList?.contains("assistant"))
          for (const n of r.addedNodes) if (n.textContent) window.answerTexts.push(n.textContent);
    }).observe(document.body, { childList: true, subtree: true });
  });
  await page.fill("#max", "12");
  await page.fill("#prompt", "Tell me about kern.");
  await page.click("#send");
  await page.waitForFunction(() => /^(done|error)/.test(document.getElementById("status").textContent), null, { timeout: 60000 });
  const status = await page.textContent("#status");
  assert(status === "done (length)", `status: ${status}`);
  const seen = new Set(await page.evaluate(() => window.answerTexts));
  assert(seen.size >= 3, `the answer did not stream in (seen ${seen.size} distinct texts)`);
  const shown = await page.evaluate(() => [...document.querySelectorAll(".assistant")].pop().textContent);
  const api = await (await fetch(server.url + "/v1/chat/completions", {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ messages: [{ role: "user", content: "Tell me about kern." }], max_tokens: 12, temperature: 0,
                           chat_template_kwargs: { enable_thinking: false } }),
  })).json();
  assert(shown === api.choices[0].message.content, `page text ${JSON.stringify(shown)} != API ${JSON.stringify(api.choices[0].message.content)}`);
  console.log("ok: a typed prompt streams in and ends with its finish reason; the text equals the API's");

  // 2. A long answer, stopped after its first tokens.
  await page.fill("#max", "900");
  await page.fill("#prompt", "And now a long one.");
  await page.click("#send");
  await page.waitForFunction(() => [...document.querySelectorAll(".assistant")].pop().textContent.length > 0, null,
                             { timeout: 60000 });
  await page.click("#stop");
  await page.waitForFunction(() => document.getElementById("status").textContent === "stopped", null, { timeout: 60000 });
  const m = await until(async () => parseMetrics(await (await fetch(server.url + "/metrics")).text()),
                        (m) => metric(m, "kern_requests_running") === 0 && metric(m, "kern_kv_pages_used") === 0);
  assert(metric(m, "kern_requests_running") === 0 && metric(m, "kern_kv_pages_used") === 0, "the stopped answer still runs");
  // Fewer than its 900 tokens (was: < 200 of 400, a bound on how fast Stop got through).
  assert(metric(m, "kern_generation_tokens_total") < 12 + 12 + 900, "the stopped answer ran to its end");
  console.log("ok: Stop ends the answer and the server frees its sequence");
} catch (e) {
  failed = true;
  console.log(`FAIL: ${e.stack ?? e}\n${server.log.slice(-2000)}`);
} finally {
  if (browser) await browser.close();
  await server.stop("SIGTERM");
  clearTimeout(timer);
}
process.exit(failed ? 1 : 0);
