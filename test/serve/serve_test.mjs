// kern-run serve against a real process (docs/serving.md; the pattern of
// llama.cpp's server tests): the tiny model with Qwen3's real vocabulary
// (random weights, the real tokenizer) on the cpu device, driven by the
// official `openai` npm client (.cache/serve, scripts/setup.sh) and curl for
// the error statuses. Every test and wait is bounded in time; exit 77 (skip)
// with the reason when the client or curl is missing.
// usage: node serve_test.mjs KERN_RUN PLAN WEIGHTS TOKENIZER OPENAI_DIR SPEC_PLAN
// (SPEC_PLAN: a speculative plan, which has no batched decode program)
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";

import { ServerProcess, TestRunner, assert, assertEq, checkError, curl, metric, parseMetrics, until } from "./server_process.mjs";

const [kernRun, plan, weights, tokenizer, openaiDir, specPlan] = process.argv.slice(2);
const openaiEntry = path.join(openaiDir, "node_modules", "openai", "index.mjs");
if (!existsSync(openaiEntry)) {
  console.log(`SKIP: the openai client is not installed at ${openaiDir} (scripts/setup.sh installs it)`);
  process.exit(77);
}
if (!existsSync(tokenizer)) {
  console.log(`SKIP: Qwen3's tokenizer.json is not at ${tokenizer} (scripts/setup.sh installs it)`);
  process.exit(77);
}
const run = promisify(execFile);  // execFile itself is used for exit codes
try {
  await run("curl", ["--version"]);
} catch {
  console.log("SKIP: curl is not installed");
  process.exit(77);
}
const { default: OpenAI } = await import(pathToFileURL(openaiEntry).href);

const base = [plan, "--weights", weights, "--tokenizer", tokenizer, "--device", "cpu", "--served-model-name", "tiny"];
const runner = new TestRunner();
const test = runner.test.bind(runner);

const postJson = (url, obj, extra = []) =>
  curl(url, ["-X", "POST", "-H", "Content-Type: application/json", "--data-binary", typeof obj === "string" ? obj : JSON.stringify(obj), ...extra]);


async function collectChat(client, params, opts) {
  const stream = await client.chat.completions.create({ ...params, stream: true }, opts);
  const chunks = [];
  for await (const c of stream) chunks.push(c);
  return chunks;
}
const chatText = (chunks) => chunks.flatMap((c) => c.choices).map((ch) => ch.delta?.content ?? "").join("");

const msgs = [{ role: "system", content: "You are kern." }, { role: "user", content: "Tell me a story." }];

await test("a load failure ends the server with exit 2 and the error; so do a missing tokenizer, --max-batch above the plan's and a bad test hook", async () => {
  const exitOf = (args, env = {}) => new Promise((resolve) => {
    execFile(kernRun, ["serve", ...args, "--port", "0"], { timeout: 60000, env: { ...process.env, ...env } },
             (err, stdout, stderr) => resolve({ code: err ? err.code : 0, stderr }));
  });
  let r = await exitOf([plan, "--weights", "/nonexistent.safetensors", "--tokenizer", tokenizer, "--device", "cpu"]);
  assertEq(r.code, 2, "exit code (missing weights)");
  assert(r.stderr.includes("kern-run: error: /nonexistent.safetensors: cannot open: No such file or directory"), r.stderr);
  r = await exitOf([plan, "--weights", weights]);
  assertEq(r.code, 2, "exit code (no tokenizer)");
  assert(r.stderr.includes("serve needs --tokenizer"), r.stderr);
  r = await exitOf([plan, "--weights", weights, "--tokenizer", tokenizer, "--device", "cpu", "--max-batch", "9"]);
  assertEq(r.code, 2, "exit code (--max-batch above the plan's)");
  assert(r.stderr.includes("kern-run: error: --max-batch 9 exceeds the plan's max_batch 8 (its 'batch' symbol's bound)"), r.stderr);
  // A speculative plan has no decode_batch: one sequence at a time.
  r = await exitOf([specPlan, "--random-weights", "1", "--tokenizer", tokenizer, "--device", "cpu", "--max-batch", "2"]);
  assertEq(r.code, 2, "exit code (--max-batch 2 with a speculative plan)");
  assert(r.stderr.includes("kern-run: error: --max-batch 2 exceeds the plan's max_batch 1 (it has no batched decode " +
                           "program decode_batch: a speculative plan"), r.stderr);
  // The gather hook can never be met above --max-queue (the server would never start work), and must be a count.
  const ok = [plan, "--weights", weights, "--tokenizer", tokenizer, "--device", "cpu", "--max-queue", "4"];
  r = await exitOf(ok, { KERN_SERVE_TEST_GATHER: "5" });
  assertEq(r.code, 2, "exit code (KERN_SERVE_TEST_GATHER above --max-queue)");
  assert(r.stderr.includes("$KERN_SERVE_TEST_GATHER 5 exceeds --max-queue 4: it would never start"), r.stderr);
  r = await exitOf(ok, { KERN_SERVE_TEST_GATHER: "two" });
  assertEq(r.code, 2, "exit code (KERN_SERVE_TEST_GATHER not a number)");
  assert(r.stderr.includes("$KERN_SERVE_TEST_GATHER: 'two' is not a number of requests"), r.stderr);
});

await test("a model folder is served like a plan, named after the folder", async () => {
  const dir = path.join(mkdtempSync(path.join(os.tmpdir(), "kern-serve-")), "my-model");
  mkdirSync(dir);
  symlinkSync(path.resolve(plan), path.join(dir, "model.kplan"));
  symlinkSync(path.resolve(weights), path.join(dir, "weights.safetensors"));
  symlinkSync(path.resolve(tokenizer), path.join(dir, "tokenizer.json"));
  const f = new ServerProcess(kernRun, [dir, "--device", "cpu"]);
  try {
    await f.start();
    await f.waitReady();
    const models = (await curl(f.url + "/v1/models")).body;
    assertEq(models.data.map((m) => m.id), ["my-model"], "model ids");
    const r = await postJson(f.url + "/v1/completions", { model: "my-model", prompt: "Hi", max_tokens: 2 });
    assertEq(r.status, 200, "completion status");
  } finally {
    assertEq(await f.stop("SIGTERM"), 0, "exit code");
    rmSync(path.dirname(dir), { recursive: true, force: true });
  }
});

// ---------------------------------------------------------------- server A
const a = new ServerProcess(kernRun, [...base, "--max-batch", "8", "--max-queue", "32"]);
await a.start();
await a.waitReady();
const client = new OpenAI({ baseURL: a.url + "/v1", apiKey: "unused", maxRetries: 0, timeout: 60000 });

await test("/health is 200 and /v1/models lists the served model", async () => {
  assertEq((await curl(a.url + "/health")).status, 200, "health");
  const models = await client.models.list();
  assertEq(models.data.map((m) => m.id), ["tiny"], "model ids");
});

let solo;  // the greedy chat answer, for the streaming and concurrency checks
await test("a chat completion has OpenAI's shape and usage", async () => {
  const r = await client.chat.completions.create({ model: "tiny", messages: msgs, max_tokens: 12, temperature: 0, ignore_eos: true });
  assert(r.id.startsWith("chatcmpl-"), "id " + r.id);
  assertEq(r.object, "chat.completion", "object");
  assertEq(r.model, "tiny", "model");
  assertEq(r.choices.length, 1, "choices");
  assertEq(r.choices[0].message.role, "assistant", "role");
  assertEq(r.choices[0].finish_reason, "length", "finish_reason");
  const tok = await postJson(a.url + "/tokenize", { messages: msgs });
  assertEq(r.usage.prompt_tokens, tok.body.count, "prompt_tokens (as /tokenize counts the templated messages)");
  assertEq(r.usage.completion_tokens, 12, "completion_tokens");
  assertEq(r.usage.total_tokens, tok.body.count + 12, "total_tokens");
  assert(r.choices[0].message.content.length > 0, "empty content");
  solo = r.choices[0].message.content;
});

await test("a streamed chat carries one id, the role first, the finish reason last, then usage", async () => {
  const chunks = await collectChat(client, { model: "tiny", messages: msgs, max_tokens: 12, temperature: 0, ignore_eos: true,
                                             stream_options: { include_usage: true } });
  assert(chunks.length >= 3, `only ${chunks.length} chunks`);
  assertEq(new Set(chunks.map((c) => c.id)).size, 1, "distinct ids");
  assertEq(chunks[0].object, "chat.completion.chunk", "object");
  assertEq(chunks[0].choices[0].delta.role, "assistant", "first delta's role");
  const last = chunks[chunks.length - 1];
  assertEq(last.choices, [], "usage chunk's choices");
  assertEq(last.usage.completion_tokens, 12, "usage.completion_tokens");
  const fin = chunks[chunks.length - 2].choices[0];
  assertEq(fin.finish_reason, "length", "finish_reason");
  assertEq(fin.delta.content ?? "", "", "the finish chunk's content");
  for (const c of chunks.slice(0, -2)) assertEq(c.choices[0].finish_reason, null, "finish_reason before the end");
  assertEq(chatText(chunks), solo, "streamed text = the non-streamed answer");
});

// Issue 39: a client resending the whole conversation every turn, as chat
// clients do, has each turn's history mapped from the prefix cache: the
// earlier turns' full pages (their prompts and replies, the last reply id
// aside) are cached_tokens, and only the new tokens plus at most one page
// are prefilled. Counted through usage and /metrics, not timed.
await test("a 4-turn chat resending its history prefills only each turn's new tokens (plus at most one page)", async () => {
  // The earlier tests' re-prefills run after their replies: wait until none
  // is pending, so that they count before this test's baseline.
  const before = await until(async () => parseMetrics(await (await fetch(a.url + "/metrics")).text()),
                             (m) => metric(m, "kern_prefix_cache_reprefills_pending") === 0);
  assertEq(metric(before, "kern_prefix_cache_reprefills_pending"), 0, "re-prefills pending before the chat");
  const history = [{ role: "system", content: "You are kern, a runtime that remembers conversations." }];
  let prev = null;  // the previous turn's prompt + completion tokens
  let cachedSum = 0, promptSum = 0, reprefillSum = 0;
  for (let turn = 1; turn <= 4; turn++) {
    history.push({ role: "user", content: `Turn ${turn}: tell me one more thing about paged attention and block tables.` });
    const params = { model: "tiny", messages: history, max_tokens: 24, temperature: 0, ignore_eos: true,
                     chat_template_kwargs: { enable_thinking: false } };
    let reply, usage;
    if (turn % 2 === 0) {  // streamed turns carry usage in their last chunk
      const chunks = await collectChat(client, { ...params, stream_options: { include_usage: true } });
      reply = chatText(chunks);
      usage = chunks[chunks.length - 1].usage;
    } else {
      const r = await client.chat.completions.create(params);
      reply = r.choices[0].message.content;
      usage = r.usage;
    }
    assert(usage.prompt_tokens_details !== undefined, `turn ${turn}: usage.prompt_tokens_details is missing`);
    const cached = usage.prompt_tokens_details.cached_tokens;
    if (turn === 1) {
      assertEq(cached, 0, "turn 1's cached_tokens");
    } else {
      // The KV the previous turn wrote: its prompt and all its ids but the last; whole pages of it, and never
      // the page of this prompt's last token.
      const written = prev.prompt + prev.completion - 1;
      const want = 16 * Math.floor(Math.min(written, usage.prompt_tokens - 1) / 16);
      assertEq(cached, want, `turn ${turn}'s cached_tokens (previous turn ${prev.prompt} + ${prev.completion} tokens)`);
      // The new tokens: the template's closing of the reply, the new message, the generation prompt.
      const fresh = usage.prompt_tokens - (prev.prompt + prev.completion);
      assert(usage.prompt_tokens - cached <= fresh + 16,
             `turn ${turn} computed ${usage.prompt_tokens - cached} prompt tokens for ${fresh} new ones`);
    }
    cachedSum += cached;
    promptSum += usage.prompt_tokens;
    // After the reply, decode's positions in full pages ([prompt, written): the plan has prefill_last, which
    // wrote the last prompt token's KV, docs/causal-lm-manifest.md) are prefilled again, then cached.
    const fullEnd = 16 * Math.floor((usage.prompt_tokens + usage.completion_tokens - 1) / 16);
    reprefillSum += Math.max(0, fullEnd - usage.prompt_tokens);
    prev = { prompt: usage.prompt_tokens, completion: usage.completion_tokens };
    history.push({ role: "assistant", content: reply });
  }
  assert(cachedSum > 0, "no turn hit the cache");
  const m = await until(async () => parseMetrics(await (await fetch(a.url + "/metrics")).text()),
                        (m) => metric(m, "kern_prompt_tokens_total") - metric(before, "kern_prompt_tokens_total") >= promptSum &&
                               metric(m, "kern_prefix_cache_reprefilled_tokens_total") -
                                 metric(before, "kern_prefix_cache_reprefilled_tokens_total") >= reprefillSum);
  assertEq(metric(m, "kern_prompt_tokens_cached_total") - metric(before, "kern_prompt_tokens_cached_total"), cachedSum,
           "kern_prompt_tokens_cached_total");
  assertEq(metric(m, "kern_prompt_tokens_computed_total") - metric(before, "kern_prompt_tokens_computed_total"),
           promptSum - cachedSum, "kern_prompt_tokens_computed_total");
  assert(metric(m, "kern_kv_pages_cached") > 0, "kern_kv_pages_cached");
  assertEq(metric(m, "kern_kv_pages_used"), 0, "pages used when idle (cached pages count as free)");
  assert(metric(m, "kern_prefix_cache_evictions_total") >= 0, "kern_prefix_cache_evictions_total");
  assertEq(metric(m, "kern_prefix_cache_reprefilled_tokens_total") -
           metric(before, "kern_prefix_cache_reprefilled_tokens_total"), reprefillSum,
           "kern_prefix_cache_reprefilled_tokens_total");
});

await test("completions, streaming and not, agree; token-id prompts work", async () => {
  const r = await client.completions.create({ model: "tiny", prompt: "Once upon a time", max_tokens: 10, temperature: 0, ignore_eos: true });
  assertEq(r.object, "text_completion", "object");
  assert(r.id.startsWith("cmpl-"), "id");
  assertEq(r.choices[0].finish_reason, "length", "finish_reason");
  const stream = await client.completions.create({ model: "tiny", prompt: "Once upon a time", max_tokens: 10, temperature: 0,
                                                   ignore_eos: true, stream: true });
  let text = "", finish = null;
  for await (const c of stream) { text += c.choices[0]?.text ?? ""; finish = c.choices[0]?.finish_reason ?? finish; }
  assertEq(text, r.choices[0].text, "streamed text");
  assertEq(finish, "length", "streamed finish_reason");
  const ids = (await postJson(a.url + "/tokenize", { prompt: "Once upon a time" })).body.tokens;
  const byIds = await client.completions.create({ model: "tiny", prompt: ids, max_tokens: 10, temperature: 0, ignore_eos: true });
  assertEq(byIds.choices[0].text, r.choices[0].text, "text from the prompt's ids");
  const detok = await postJson(a.url + "/detokenize", { tokens: ids });
  assertEq(detok.body.prompt, "Once upon a time", "/detokenize");
});

await test("a stop string ends the text before it, with finish_reason stop", async () => {
  const full = (await client.completions.create({ model: "tiny", prompt: "Hello", max_tokens: 24, temperature: 0, ignore_eos: true })).choices[0].text;
  // A stop string from the middle of the greedy text (its first occurrence).
  let k = Math.floor(full.length / 2);
  const stop = full.slice(k, k + 3);
  k = full.indexOf(stop);
  assert(stop.length === 3 && k > 0, `no usable stop string in ${JSON.stringify(full)}`);
  for (const stream of [false, true]) {
    const params = { model: "tiny", prompt: "Hello", max_tokens: 24, temperature: 0, ignore_eos: true, stop: [stop] };
    let text = "", finish;
    if (stream) {
      for await (const c of await client.completions.create({ ...params, stream: true })) {
        text += c.choices[0]?.text ?? "";
        finish = c.choices[0]?.finish_reason ?? finish;
      }
    } else {
      const r = await client.completions.create(params);
      text = r.choices[0].text;
      finish = r.choices[0].finish_reason;
    }
    assertEq(text, full.slice(0, k), `text before the stop string (stream ${stream})`);
    assertEq(finish, "stop", `finish_reason (stream ${stream})`);
  }
});

await test("a seed with temperature 0 gives the greedy text; temperature 3 is a 400", async () => {
  const r = await client.chat.completions.create({ model: "tiny", messages: msgs, max_tokens: 12, temperature: 0, seed: 1234, ignore_eos: true });
  assertEq(r.choices[0].message.content, solo, "seeded greedy text");
  const e = checkError(await postJson(a.url + "/v1/chat/completions", { messages: msgs, temperature: 3, seed: 1 }), 400, "temperature 3");
  assertEq(e.param, "temperature", "param");
});

await test("malformed requests are 400s naming the field; unknown model and path are 404s", async () => {
  const url = a.url + "/v1/chat/completions";
  let e = checkError(await postJson(url, "{\"messages\": [}"), 400, "malformed JSON");
  assert(e.message.startsWith("invalid JSON at byte"), e.message);
  e = checkError(await postJson(url, { messages: msgs, n: 2 }), 400, "n=2");
  assertEq(e.param, "n", "n param");
  e = checkError(await postJson(url, { messages: msgs, logprobs: true }), 400, "logprobs");
  assertEq(e.message, "'logprobs' is not supported yet", "logprobs message");
  e = checkError(await postJson(url, { messages: msgs, max_tokens: 100000 }), 400, "context length");
  assertEq(e.code, "context_length_exceeded", "code");
  e = checkError(await postJson(url, { model: "gpt-4", messages: msgs }), 404, "unknown model");
  assertEq(e.code, "model_not_found", "code");
  checkError(await curl(a.url + "/v1/nothing"), 404, "unknown path");
  e = checkError(await postJson(url, { messages: msgs, stop_token_ids: [999999999] }), 400, "stop id");
  assertEq(e.param, "stop_token_ids", "param");
});

await test("unknown fields are ignored and logged once per name", async () => {
  for (let i = 0; i < 2; i++) {
    const r = await postJson(a.url + "/v1/chat/completions", { messages: msgs, max_tokens: 2, user: "u", kern_unknown_x: 1 });
    assertEq(r.status, 200, "status");
  }
  assertEq((a.log.match(/request field 'kern_unknown_x' is not used by kern; ignored/g) ?? []).length, 1, "log lines");
});

/// The decode batch occupancy histogram: [decode steps, steps with more than one row, rows in all].
async function occupancy(url) {
  const m = parseMetrics(await (await fetch(url + "/metrics")).text());
  const steps = metric(m, "kern_decode_batch_rows_count");
  return [steps, steps - metric(m, "kern_decode_batch_rows_bucket", { le: "1" }), metric(m, "kern_decode_batch_rows_sum")];
}

/// 16 concurrent streams each equal to the same request sent alone, and the
/// occupancy histogram shows steps that decoded several of them at once.
/// Alone: one at a time on server A. Together: on a fresh server E whose
/// first admission waits until all 16 are queued (KERN_SERVE_TEST_GATHER),
/// so they overlap however fast or slow the machine runs (on A, a request
/// may end before the next one arrives); whether the engine then decodes
/// them in one batch is what the histogram checks.
async function concurrentEqualsSolo(params) {
  const prompts = Array.from({ length: 16 }, (_, i) => [{ role: "user", content: `Request number ${i}: say something.` }]);
  const alone = [];
  for (let i = 0; i < 16; i++) alone.push((await client.chat.completions.create(params(prompts[i], i))).choices[0].message.content);
  const e = new ServerProcess(kernRun, [...base, "--max-batch", "8", "--max-queue", "32"], { KERN_SERVE_TEST_GATHER: "16" });
  try {
    await e.start();
    await e.waitReady();
    const ec = new OpenAI({ baseURL: e.url + "/v1", apiKey: "unused", maxRetries: 0, timeout: 120000 });
    const [steps0, multi0] = await occupancy(e.url);
    assertEq([steps0, multi0], [0, 0], "server E's decode steps before the 16");
    const together = await Promise.all(prompts.map((m, i) => collectChat(ec, params(m, i))));
    for (let i = 0; i < 16; i++) {
      assertEq(chatText(together[i]), alone[i], `request ${i}`);
      assertEq(together[i][together[i].length - 1].choices[0].finish_reason, "length", `request ${i}'s finish_reason`);
    }
    assert(new Set(alone).size > 1, "every request gave the same text: the comparison would prove nothing");
    const [steps1, multi1, rows1] = await occupancy(e.url);
    assert(steps1 > 0, "no decode step counted");
    assert(multi1 > 0, `no decode step ran more than one sequence (${steps1} steps): nothing was batched`);
    assert(rows1 / steps1 > 1, `mean rows per decode step ${rows1 / steps1}`);
  } finally {
    assertEq(await e.stop("SIGTERM"), 0, "server E's exit code");
  }
}

await test("16 concurrent streams with --max-batch 8 each equal the same request sent alone (greedy), batched", async () => {
  await concurrentEqualsSolo((m, i) => ({ model: "tiny", messages: m, max_tokens: 6 + (i % 5), temperature: 0, ignore_eos: true, seed: i }));
}, 300000);

await test("16 concurrent seeded streams (temperature > 0) with --max-batch 8 each equal the same request sent alone, batched", async () => {
  await concurrentEqualsSolo((m, i) => ({ model: "tiny", messages: m, max_tokens: 6 + (i % 5), temperature: 0.8, top_p: 0.95,
                                          seed: 100 + i, ignore_eos: true }));
}, 300000);

await test("/metrics is Prometheus text with requests, tokens, latencies and KV pages", async () => {
  const r = await fetch(a.url + "/metrics");
  assert(r.headers.get("content-type").startsWith("text/plain"), "content type");
  const m = parseMetrics(await r.text());
  assert(metric(m, "kern_requests_total", { status: "200" }) >= 30, "200s counted");
  assert(metric(m, "kern_requests_total", { status: "400" }) >= 5, "400s counted");
  assert(metric(m, "kern_generation_tokens_total") > 100, "generated tokens");
  assert(metric(m, "kern_prompt_tokens_total") > 100, "prompt tokens");
  const ttft = m["kern_time_to_first_token_seconds_bucket"];
  assertEq(ttft[ttft.length - 1].labels.le, "+Inf", "last bucket");
  assertEq(ttft[ttft.length - 1].value, metric(m, "kern_time_to_first_token_seconds_count"), "+Inf bucket = count");
  for (let i = 1; i < ttft.length; i++) assert(ttft[i].value >= ttft[i - 1].value, "buckets are cumulative");
  assert(metric(m, "kern_inter_token_latency_seconds_count") > 50, "inter-token latencies");
  assertEq(metric(m, "kern_kv_pages_used"), 0, "pages used when idle");
  assert(metric(m, "kern_kv_pages_free") > 0, "pages free");
  assertEq(metric(m, "kern_requests_running"), 0, "running");
  assertEq(metric(m, "kern_requests_waiting"), 0, "waiting");
});

// The stream's first text is read before SIGTERM (was: a 100 ms sleep, which
// under load could send SIGTERM before the request arrived: a 503). Server A
// has no slow steps, so the stream may end before SIGTERM lands; that it was
// still running when SIGTERM came is asserted on server D below.
await test("SIGTERM during a stream lets it finish, then the server exits 0", async () => {
  const stream = await client.chat.completions.create({ model: "tiny", messages: msgs, max_tokens: 100, temperature: 0,
                                                        ignore_eos: true, stream: true });
  const it = stream[Symbol.asyncIterator]();
  const chunks = [(await it.next()).value, (await it.next()).value];  // the role chunk, its first text: it runs
  const code = a.stop("SIGTERM");
  for (let c; !(c = await it.next()).done;) chunks.push(c.value);
  assertEq(chunks[chunks.length - 1].choices[0].finish_reason, "length", "the running stream finished");
  assertEq(await code, 0, "exit code");
  assert(/stopped/.test(a.log), "no 'stopped' log line");
  assert(/finish length/.test(a.log), "no per-request log line");
});
await a.stop("SIGKILL");

// ---------------------------------------------------------------- server B: slow on purpose
// Loading waits 6 s and every engine step 50 ms (test hooks), one request
// runs and one waits: the 503, 429 and abort paths are deterministic. A step
// sleeps at least 50 ms however idle the machine, so a request of N tokens
// runs at least N * 50 ms: one that must still run while the test looks is
// made long enough (900 tokens: 45 s) that a loaded machine cannot outrun it,
// and is then cancelled; the tests wait on /metrics, never on a sleep.
const b = new ServerProcess(kernRun, [...base, "--max-batch", "1", "--max-queue", "1", "--api-key", "sekret",
                                      "--max-body-bytes", "4096", "--sse-keepalive", "0.01"],
                            { KERN_SERVE_TEST_LOAD_DELAY_MS: "6000", KERN_SERVE_TEST_STEP_DELAY_MS: "50" });
await b.start();
const auth = ["-H", "Authorization: Bearer sekret"];
await test("while loading, /health and requests are 503", async () => {
  checkError(await curl(b.url + "/health"), 503, "health while loading");
  const e = checkError(await postJson(b.url + "/v1/chat/completions", { messages: msgs }, auth), 503, "chat while loading");
  assertEq(e.code, "model_loading", "code");
});
await b.waitReady();
const slow = new OpenAI({ baseURL: b.url + "/v1", apiKey: "sekret", maxRetries: 0, timeout: 60000 });

await test("--api-key: a missing or wrong key is 401; probes stay open", async () => {
  checkError(await postJson(b.url + "/v1/chat/completions", { messages: msgs }), 401, "no key");
  checkError(await postJson(b.url + "/v1/chat/completions", { messages: msgs }, ["-H", "Authorization: Bearer nope"]), 401, "wrong key");
  assertEq((await curl(b.url + "/health")).status, 200, "health without a key");
});

await test("a body over --max-body-bytes is 413", async () => {
  const big = JSON.stringify({ messages: [{ role: "user", content: "x".repeat(10000) }] });
  checkError(await postJson(b.url + "/v1/chat/completions", big, auth), 413, "big body");
});

const bMetrics = async () => parseMetrics(await (await fetch(b.url + "/metrics")).text());

await test("a full queue is 429; a client aborting mid-stream frees its pages at once", async () => {
  const ctl = new AbortController();
  const running = await slow.chat.completions.create({ model: "tiny", messages: msgs, max_tokens: 900, temperature: 0, ignore_eos: true, stream: true },
                                                      { signal: ctl.signal });
  const it = running[Symbol.asyncIterator]();
  await it.next();  // the role chunk: the request runs
  await it.next();
  const queued = slow.chat.completions.create({ model: "tiny", messages: msgs, max_tokens: 2, temperature: 0, ignore_eos: true });
  // Wait until the second request is queued, then a third finds the queue full.
  let m = await until(bMetrics, (m) => metric(m, "kern_requests_waiting") === 1);
  assertEq(metric(m, "kern_requests_waiting"), 1, "waiting");
  assert(metric(m, "kern_kv_pages_used") > 0, "the running stream holds pages");
  const e = checkError(await postJson(b.url + "/v1/chat/completions", { messages: msgs, max_tokens: 2 }, auth), 429, "queue full");
  assertEq(e.code, "queue_full", "code");
  ctl.abort();
  try { while (!(await it.next()).done); } catch {}
  const q = await queued;  // runs once the aborted stream left
  assertEq(q.choices[0].finish_reason, "length", "the queued request ran");
  m = await until(bMetrics, (m) => metric(m, "kern_kv_pages_used") === 0 && metric(m, "kern_requests_running") === 0);
  assertEq(metric(m, "kern_kv_pages_used"), 0, "pages used after the abort");
  assertEq(metric(m, "kern_requests_total", { status: "499" }), 1, "the aborted request counted as 499");
  assertEq(metric(m, "kern_requests_total", { status: "429" }), 1, "the 429 counted");
  // Its tokens and the queued request's 2 (was: < 100 of 200, which a loaded
  // machine taking over 5 s to the abort would have failed).
  assert(metric(m, "kern_generation_tokens_total") < 900, "the aborted stream ran to its 900 tokens");
  const gone = /generated \d+ tokens, .*, finish client disconnected/;
  assert(gone.test(await until(async () => b.log, (l) => gone.test(l))), "no 'finish client disconnected' log line");
});

// Tokens come at least 50 ms apart (the step hook); with --sse-keepalive
// 0.01 a gap misses its comment only if the stream's thread, waking 10 ms
// after its last write, is kept off the cpu until the next token (40 ms or
// more), and the test fails only if that happens in all 19 gaps (was: 2 gaps
// of 30 ms, which a loaded machine could miss).
await test("slow steps get SSE keep-alive comments between data lines", async () => {
  const r = await fetch(b.url + "/v1/completions", {
    method: "POST", headers: { "Content-Type": "application/json", Authorization: "Bearer sekret" },
    body: JSON.stringify({ prompt: "Hi", max_tokens: 20, temperature: 0, ignore_eos: true, stream: true }),
  });
  assertEq(r.status, 200, "status");
  assert(r.headers.get("content-type").startsWith("text/event-stream"), "content type");
  const text = await r.text();
  assert(text.includes(": keep-alive\n\n"), "no keep-alive comment in " + JSON.stringify(text.slice(0, 300)));
  assert(text.endsWith("data: [DONE]\n\n"), "the stream ends with [DONE]");
});

await test("at --max-batch 1 the engine samples: a seeded temperature > 0 repeats its text", async () => {
  const sampled = [];
  for (let i = 0; i < 2; ++i) {
    const s = await slow.chat.completions.create({ model: "tiny", messages: msgs, max_tokens: 12, temperature: 0.7, seed: 7, ignore_eos: true });
    assertEq(s.choices[0].finish_reason, "length", "finish_reason");
    sampled.push(s.choices[0].message.content);
  }
  assertEq(sampled[1], sampled[0], "the same seed samples the same text");
});

// The running request is seen running (its first text) before the second
// is sent, and the second seen waiting before SIGTERM (was: a 200 ms sleep,
// after which either could be the one running). The running one has 200
// tokens (10 s at least): it is still running when SIGTERM comes unless the
// test takes 10 s from its first text to the signal; SIGTERM's grace (30 s)
// lets it finish.
await test("SIGTERM cancels queued requests with 503 and exits 0", async () => {
  const stream = await slow.chat.completions.create({ model: "tiny", messages: msgs, max_tokens: 200, temperature: 0,
                                                      ignore_eos: true, stream: true });
  const it = stream[Symbol.asyncIterator]();
  await it.next();  // the role chunk
  await it.next();  // its first text: it runs
  const rest = (async () => { let last; for (let c; !(c = await it.next()).done;) last = c.value; return last; })();
  const queued = postJson(b.url + "/v1/chat/completions", { messages: msgs, max_tokens: 2 }, auth);
  const m = await until(bMetrics, (m) => metric(m, "kern_requests_waiting") === 1);
  assertEq(metric(m, "kern_requests_waiting"), 1, "the second request waits");
  assertEq(metric(m, "kern_requests_running"), 1, "the first runs");
  const code = b.stop("SIGTERM");
  checkError(await queued, 503, "the queued request at shutdown");
  assertEq((await rest).choices[0].finish_reason, "length", "the running request finished");
  assertEq(await code, 0, "exit code");
});
await b.stop("SIGKILL");

// ---------------------------------------------------------------- server D: batched, slow steps, a small KV pool
// Every engine step sleeps 30 ms (a test hook) so streams overlap for long
// enough to look at /metrics between steps; --capacity 512 is a pool of 32
// pages of 16 tokens shared by the batch. A stream of N tokens runs at least
// N * 30 ms however idle the machine: every stream that must still run when
// the test looks has 140 tokens (4.2 s) or more, far above the test's own
// pace even on a loaded machine (was 60 tokens at 20 ms: 1.2 s).
const d = new ServerProcess(kernRun, [...base, "--max-batch", "4", "--max-queue", "4", "--capacity", "512"],
                            { KERN_SERVE_TEST_STEP_DELAY_MS: "30" });
await d.start();
await d.waitReady();
const dc = new OpenAI({ baseURL: d.url + "/v1", apiKey: "unused", maxRetries: 0, timeout: 120000 });
const dMetrics = async () => parseMetrics(await (await fetch(d.url + "/metrics")).text());
/// Polls /metrics until `ok(m)` (at most 60 s); returns the last metrics.
const dUntil = (ok) => until(dMetrics, ok);
/// KV pages a chat request reserves: ceil((prompt + max_tokens) / 16).
const pagesOf = async (messages, maxTokens) =>
  Math.ceil(((await postJson(d.url + "/tokenize", { messages })).body.count + maxTokens) / 16);
const dMsgs = (k) => [{ role: "user", content: `Stream ${k}, please.` }];

await test("the batch's KV pool: /v1/models' max_model_len is it; prompt + max_tokens beyond it is a 400", async () => {
  assertEq((await curl(d.url + "/v1/models")).body.data[0].max_model_len, 512, "max_model_len");
  const e = checkError(await postJson(d.url + "/v1/chat/completions", { messages: msgs, max_tokens: 505 }), 400, "never fits");
  assertEq(e.code, "context_length_exceeded", "code");
  const m = await dMetrics();
  assertEq(metric(m, "kern_kv_pages_free"), 32, "pages free when idle");
  assertEq(metric(m, "kern_max_batch"), 4, "kern_max_batch");
});

await test("a client aborting mid-stream while others run frees its pages at once; the others equal their solo answers", async () => {
  const params = (k, n) => ({ model: "tiny", messages: dMsgs(k), max_tokens: n, temperature: 0, ignore_eos: true });
  const soloText = [];
  for (const k of [1, 2]) soloText.push((await dc.chat.completions.create(params(k, 140))).choices[0].message.content);
  const keep = [await pagesOf(dMsgs(1), 140), await pagesOf(dMsgs(2), 140)];
  const pagesX = await pagesOf(dMsgs(3), 170);
  assert(keep[0] + keep[1] + pagesX <= 32, `pages ${keep} + ${pagesX}: the test needs the three to fit together`);
  const before = metric(await dMetrics(), "kern_requests_total", { status: "499" });
  const others = [1, 2].map((k) => collectChat(dc, params(k, 140)));
  const ctl = new AbortController();
  const x = await dc.chat.completions.create({ ...params(3, 170), stream: true }, { signal: ctl.signal });
  const it = x[Symbol.asyncIterator]();
  await it.next();  // the role chunk
  await it.next();  // its first text: it runs
  let m = await dUntil((m) => metric(m, "kern_requests_running") === 3);
  assertEq(metric(m, "kern_requests_running"), 3, "running");
  assertEq(metric(m, "kern_kv_pages_used"), keep[0] + keep[1] + pagesX, "pages of the three streams");
  ctl.abort();
  try { while (!(await it.next()).done); } catch {}
  m = await dUntil((m) => metric(m, "kern_kv_pages_used") < keep[0] + keep[1] + pagesX);
  assertEq(metric(m, "kern_kv_pages_used"), keep[0] + keep[1], "pages once the aborted stream left");
  assertEq(metric(m, "kern_requests_running"), 2, "the others still run");
  const texts = (await Promise.all(others)).map(chatText);
  assertEq(texts, soloText, "the other streams' texts");
  m = await dUntil((m) => metric(m, "kern_requests_running") === 0);
  assertEq(metric(m, "kern_kv_pages_used"), 0, "pages used at the end");
  assertEq(metric(m, "kern_requests_total", { status: "499" }), before + 1, "the aborted stream counted as 499");
});

await test("a non-streaming client that disconnects cancels its sequence: its pages are free at once", async () => {
  const before = await dMetrics();
  const ctl = new AbortController();
  const pending = fetch(d.url + "/v1/chat/completions", {
    method: "POST", headers: { "Content-Type": "application/json" }, signal: ctl.signal,
    body: JSON.stringify({ messages: dMsgs(4), max_tokens: 490, temperature: 0, ignore_eos: true }),
  }).catch((e) => e);
  // Running and decoding: a few decode steps since it was sent.
  let m = await dUntil((m) => metric(m, "kern_requests_running") === 1 &&
                              metric(m, "kern_decode_batch_rows_count") > metric(before, "kern_decode_batch_rows_count") + 3);
  assertEq(metric(m, "kern_requests_running"), 1, "running");
  assertEq(metric(m, "kern_kv_pages_used"), await pagesOf(dMsgs(4), 490), "the request's pages");
  ctl.abort();
  assert((await pending) instanceof Error, "the aborted fetch resolved");
  m = await dUntil((m) => metric(m, "kern_requests_running") === 0);
  assertEq(metric(m, "kern_requests_running"), 0, "running after the disconnect");
  assertEq(metric(m, "kern_kv_pages_used"), 0, "pages used after the disconnect");
  // Cut short: fewer than its 490 tokens (was: < 200 of 400, which a loaded
  // machine taking over 4 s to notice the disconnect would have failed).
  const generated = metric(m, "kern_generation_tokens_total") - metric(before, "kern_generation_tokens_total");
  assert(generated > 0 && generated < 490, `it generated ${generated} of its 490 tokens`);
  assertEq(metric(m, "kern_requests_total", { status: "499" }), metric(before, "kern_requests_total", { status: "499" }) + 1, "499s");
  // The log line is written beside the cancel, not before /metrics shows it: wait for it.
  const lastPromptLine = (log) => log.split("\n").filter((l) => l.includes("prompt")).pop() ?? "";
  const line = lastPromptLine(await until(async () => d.log, (l) => /finish client disconnected/.test(lastPromptLine(l))));
  assert(/finish client disconnected/.test(line), "its log line: " + line);
});

// A request is counted running only from the step that admitted it, the
// step after which kern_kv_pages_used holds its pages (was: running from
// the hand-over to the engine, so a read in the step's 30 ms showed it
// running with no pages, and a test comparing the two failed now and then).
await test("every /metrics read agrees: the running requests' pages are in kern_kv_pages_used", async () => {
  const want = await pagesOf(dMsgs(7), 200);
  const ctl = new AbortController();
  const pending = fetch(d.url + "/v1/chat/completions", {
    method: "POST", headers: { "Content-Type": "application/json" }, signal: ctl.signal,
    body: JSON.stringify({ messages: dMsgs(7), max_tokens: 200, temperature: 0, ignore_eos: true }),
  }).catch((e) => e);
  // Reads as fast as they come from the send on, until 10 of them saw it
  // running (bounded: 20000 reads, 60 s; the count bound is far above the
  // reads a fast machine makes before a 30 ms step admits it).
  let seen = 0;
  const t0 = Date.now();
  for (let i = 0; i < 20000 && seen < 10 && Date.now() - t0 < 60000; ++i) {
    const m = await dMetrics();
    const running = metric(m, "kern_requests_running");
    assertEq(metric(m, "kern_kv_pages_used"), running * want, `pages used at read ${i} (${running} running)`);
    if (running === 1) ++seen;
  }
  assertEq(seen, 10, "reads that saw it running");
  ctl.abort();
  assert((await pending) instanceof Error, "the aborted fetch resolved");
  const m = await dUntil((m) => metric(m, "kern_requests_running") === 0 && metric(m, "kern_requests_waiting") === 0);
  assertEq(metric(m, "kern_kv_pages_used"), 0, "pages used after the abort");
});

await test("a request whose pages are not free yet waits in the queue, then joins the batch when they are", async () => {
  const first = await pagesOf(dMsgs(5), 300), second = await pagesOf(dMsgs(6), 250);
  assert(first + second > 32 && first <= 32 && second <= 32, `pages ${first} + ${second}: the test needs them not to fit together`);
  const ctl1 = new AbortController(), ctl2 = new AbortController();
  const s1 = await dc.chat.completions.create({ model: "tiny", messages: dMsgs(5), max_tokens: 300, temperature: 0, ignore_eos: true,
                                                stream: true }, { signal: ctl1.signal });
  const it1 = s1[Symbol.asyncIterator]();
  await it1.next();
  await it1.next();
  const p2 = dc.chat.completions.create({ model: "tiny", messages: dMsgs(6), max_tokens: 250, temperature: 0, ignore_eos: true,
                                          stream: true }, { signal: ctl2.signal });
  let m = await dUntil((m) => metric(m, "kern_requests_waiting") === 1);
  assertEq(metric(m, "kern_requests_waiting"), 1, "the second waits");
  assertEq(metric(m, "kern_requests_running"), 1, "the first runs alone");
  assertEq(metric(m, "kern_kv_pages_used"), first, "only the first's pages are reserved");
  ctl1.abort();
  try { while (!(await it1.next()).done); } catch {}
  const it2 = (await p2)[Symbol.asyncIterator]();
  await it2.next();
  const c = await it2.next();  // its first text: admitted once the first left
  assert(!c.done, "the second stream ended early");
  m = await dUntil((m) => metric(m, "kern_requests_waiting") === 0 && metric(m, "kern_requests_running") === 1);
  assertEq(metric(m, "kern_kv_pages_used"), second, "the second's pages");
  ctl2.abort();
  try { while (!(await it2.next()).done); } catch {}
  m = await dUntil((m) => metric(m, "kern_requests_running") === 0);
  assertEq(metric(m, "kern_kv_pages_used"), 0, "pages used at the end");
});
// A stream of 200 tokens (6 s at least) whose first text was read before
// SIGTERM: the log shows SIGTERM before the stream's end unless the test
// takes 6 s from that text to the signal.
await test("SIGTERM while a stream runs lets it finish all its tokens, then the server exits 0", async () => {
  const stream = await dc.chat.completions.create({ model: "tiny", messages: dMsgs(7), max_tokens: 200, temperature: 0,
                                                    ignore_eos: true, stream: true, stream_options: { include_usage: true } });
  const it = stream[Symbol.asyncIterator]();
  await it.next();  // the role chunk
  await it.next();  // its first text: it runs
  const code = d.stop("SIGTERM");
  const chunks = [];
  for (let c; !(c = await it.next()).done;) chunks.push(c.value);
  assertEq(chunks[chunks.length - 2].choices[0].finish_reason, "length", "the running stream finished");
  assertEq(chunks[chunks.length - 1].usage.completion_tokens, 200, "its tokens");
  assertEq(await code, 0, "exit code");
  const sigterm = d.log.indexOf("SIGTERM: stopping"), end = d.log.search(/generated 200 tokens, .*, finish length/);
  assert(sigterm >= 0 && end > sigterm, "the log does not show SIGTERM before the stream's end");
  assert(/stopped/.test(d.log), "no 'stopped' log line");
});
await d.stop("SIGKILL");

// ---------------------------------------------------------------- server C: a short request timeout
// 200 tokens at 50 ms a step take 10 s at least, so a request cannot end
// before the 3 s timeout however fast the machine; the stream's first token
// (one step, ~50 ms) must come before it, or the answer is a plain 504 and
// not a stream: 3 s leaves a loaded machine 60 times the step (was 0.5 s).
const c = new ServerProcess(kernRun, [...base, "--request-timeout", "3"], { KERN_SERVE_TEST_STEP_DELAY_MS: "50" });
await c.start();
await c.waitReady();
await test("without --max-batch the server decodes up to the plan's max_batch (8) at once", async () => {
  assertEq(metric(parseMetrics(await (await fetch(c.url + "/metrics")).text()), "kern_max_batch"), 8, "kern_max_batch");
  assert(/max batch 8,/.test(c.log), "the ready line names max batch 8");
});

await test("a request running past --request-timeout is cancelled: 504, or an error event in a stream", async () => {
  const e = checkError(await postJson(c.url + "/v1/chat/completions", { messages: msgs, max_tokens: 200, ignore_eos: true }), 504, "timeout");
  assertEq(e.code, "timeout", "code");
  const r = await fetch(c.url + "/v1/chat/completions", {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ messages: msgs, max_tokens: 200, ignore_eos: true, stream: true }),
  });
  const text = await r.text();
  assert(/data: \{"error":\{"message":"the request ran longer than --request-timeout"/.test(text), "no error event in " + text.slice(-300));
  assert(text.endsWith("data: [DONE]\n\n"), "no [DONE]");
  const m = await until(async () => parseMetrics(await (await fetch(c.url + "/metrics")).text()),
                        (m) => metric(m, "kern_requests_running") === 0 && metric(m, "kern_kv_pages_used") === 0);
  assertEq(metric(m, "kern_kv_pages_used"), 0, "pages used after the timeouts");
  assertEq(metric(m, "kern_requests_total", { status: "504" }), 2, "504s counted");
});
assertEq(await c.stop("SIGTERM"), 0, "server C's exit code");

console.log(runner.failures ? `${runner.failures} test(s) failed` : "all server tests passed");
process.exit(runner.failures ? 1 : 0);
