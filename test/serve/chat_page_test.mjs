// The chat page at / (kern-run/serve/chat_page.html) in headless Chromium
// (Debian's chromium driven by npm playwright-core, .cache/serve): type a
// prompt, see the answer stream in (the text grows over several steps) and
// end with its finish reason; the final text equals the same request sent to
// the API. Then Stop mid-answer: the page says "stopped" and the server
// frees the sequence. Exit 77 (skip) with the reason when chromium or
// playwright-core is missing.
// usage: node chat_page_test.mjs KERN_RUN PLAN WEIGHTS TOKENIZER NPM_DIR
import { existsSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

import { ServerProcess, parseMetrics, metric, sleep } from "./server_process.mjs";

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

  // 1. Type a prompt and watch the answer stream in.
  await page.fill("#max", "12");
  await page.fill("#prompt", "Tell me about kern.");
  await page.click("#send");
  const seen = new Set();
  for (let i = 0; i < 2000; i++) {
    const [text, status] = await page.evaluate(() => [document.querySelector(".assistant:last-child")?.textContent ?? "",
                                                      document.getElementById("status").textContent]);
    if (text) seen.add(text);
    if (status.startsWith("done") || status.startsWith("error")) break;
    await sleep(10);
  }
  const status = await page.textContent("#status");
  assert(status === "done (length)", `status: ${status}`);
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
  await page.fill("#max", "400");
  await page.fill("#prompt", "And now a long one.");
  await page.click("#send");
  for (let i = 0; i < 2000; i++) {
    const t = await page.evaluate(() => [...document.querySelectorAll(".assistant")].pop().textContent);
    if (t.length > 0) break;
    await sleep(10);
  }
  await page.click("#stop");
  await page.waitForFunction(() => document.getElementById("status").textContent === "stopped", null, { timeout: 20000 });
  let m;
  for (let i = 0; i < 300; i++) {
    m = parseMetrics(await (await fetch(server.url + "/metrics")).text());
    if (metric(m, "kern_requests_running") === 0 && metric(m, "kern_kv_pages_used") === 0) break;
    await sleep(20);
  }
  assert(metric(m, "kern_requests_running") === 0 && metric(m, "kern_kv_pages_used") === 0, "the stopped answer still runs");
  assert(metric(m, "kern_generation_tokens_total") < 12 + 12 + 200, "the stopped answer ran on");
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
