// A load test of kern-run serve that stops by itself (issue 23, Deliver 3):
// it starts the real server on a free loopback port, runs N clients that
// share a fixed number of streaming chat requests (raw fetch + SSE parsing,
// no client library), and reports requests/s, output tok/s, p50/p99 time to
// first token and inter-token latency, and errors. It checks that every
// accepted request got a complete response (role chunk, content, a finish
// reason, usage equal to max_tokens, [DONE]: nothing lost) and that the
// server's resident memory stays bounded (its RSS after the load is within
// --rss-slack-mib of its RSS after a warm-up round). Each repetition is a
// row; the last row is the median. --max-batch takes a list (8,1): one
// server and one table per value, then a summary of the medians, with the
// decode batch occupancy the server's /metrics counted (mean rows per
// decode step). Exit 1 when a check fails.
// usage: node bench/serve_load.mjs KERN_RUN PLAN WEIGHTS TOKENIZER [--device cpu] [--clients 8]
//        [--requests 32] [--max-tokens 16] [--max-batch 8[,1...]] [--repeats 3] [--rss-slack-mib 32] [--out FILE.md]
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import os from "node:os";

import { ServerProcess, sleep } from "../test/serve/server_process.mjs";

const [kernRun, plan, weights, tokenizer, ...rest] = process.argv.slice(2);
const opt = { device: "cpu", clients: 8, requests: 32, "max-tokens": 16, "max-batch": "8", repeats: 3, "rss-slack-mib": 32, out: "" };
for (let i = 0; i < rest.length; i += 2) {
  const k = rest[i].replace(/^--/, "");
  if (!(k in opt) || rest[i + 1] === undefined) {
    console.error(`serve_load.mjs: unknown option or missing value: ${rest[i]}`);
    process.exit(2);
  }
  opt[k] = typeof opt[k] === "number" ? Number(rest[i + 1]) : rest[i + 1];
}
if (!tokenizer) {
  console.error("usage: node bench/serve_load.mjs KERN_RUN PLAN WEIGHTS TOKENIZER [options]");
  process.exit(2);
}
const batches = opt["max-batch"].split(",").map(Number);
if (!batches.every((b) => Number.isInteger(b) && b >= 1)) {
  console.error(`serve_load.mjs: --max-batch ${opt["max-batch"]}: expected integers >= 1, comma-separated`);
  process.exit(2);
}

const rssKiB = (pid) => Number(readFileSync(`/proc/${pid}/status`, "utf8").match(/VmRSS:\s+(\d+)/)[1]);
const pct = (xs, p) => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const median = (xs) => pct(xs, 50);

/// One streaming request read chunk by chunk (timing each content chunk).
async function streamOne(url, i) {
  const t0 = performance.now();
  let res;
  try {
    res = await fetch(url + "/v1/chat/completions", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({
        messages: [{ role: "user", content: `Load test request ${i}: write something.` }],
        max_tokens: opt["max-tokens"], temperature: 0, ignore_eos: true, stream: true,
        stream_options: { include_usage: true },
      }),
    });
  } catch (e) {
    return { ok: false, why: `fetch: ${e.message}` };
  }
  if (res.status !== 200) return { ok: false, why: `status ${res.status}` };
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = "", role = false, finish = null, usage = null, done = false, ttft = null, last = null;
  const itls = [];
  for (;;) {
    const { value, done: end } = await reader.read();
    if (end) break;
    buf += dec.decode(value, { stream: true });
    let k;
    while ((k = buf.indexOf("\n\n")) >= 0) {
      const ev = buf.slice(0, k);
      buf = buf.slice(k + 2);
      if (!ev.startsWith("data: ")) continue;
      const data = ev.slice(6);
      if (data === "[DONE]") { done = true; continue; }
      const c = JSON.parse(data);
      if (c.usage) usage = c.usage;
      for (const ch of c.choices) {
        if (ch.delta.role) role = true;
        if (ch.delta.content) {
          const now = performance.now();
          if (ttft === null) ttft = now - t0;
          else itls.push(now - last);
          last = now;
        }
        if (ch.finish_reason) finish = ch.finish_reason;
      }
    }
  }
  const complete = role && done && finish === "length" && usage && usage.completion_tokens === opt["max-tokens"];
  return { ok: complete, why: complete ? "" : `incomplete: role ${role}, [DONE] ${done}, finish ${finish}, usage ${JSON.stringify(usage)}`,
           ttft, itls, tokens: usage ? usage.completion_tokens : 0 };
}

/// `n` requests over `clients` workers; returns the per-request results and the wall time.
async function round(url, n, clients, offset) {
  let next = 0;
  const results = [];
  const t0 = performance.now();
  await Promise.all(Array.from({ length: clients }, async () => {
    for (;;) {
      const i = next++;
      if (i >= n) return;
      results.push(await streamOne(url, offset + i));
    }
  }));
  return { results, seconds: (performance.now() - t0) / 1000 };
}

const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : "-");
const line = (name, r) => `| ${name} | ${f(r.rps, 2)} | ${f(r.tps)} | ${f(r.ttft50)} | ${f(r.ttft99)} | ${f(r.itl50)} | ${f(r.itl99)} | ${r.complete} of ${opt.requests} | ${r.errors} |`;
const header = [`| run | req/s | output tok/s | TTFT p50 | TTFT p99 | ITL p50 | ITL p99 | complete | errors |`,
                `|---|---|---|---|---|---|---|---|---|`];

/// Mean rows per decode step the server counted (kern_decode_batch_rows).
async function occupancy(url) {
  const text = await (await fetch(url + "/metrics")).text();
  const value = (name) => Number((text.match(new RegExp(`^${name} (\\S+)$`, "m")) ?? [])[1] ?? NaN);
  return { steps: value("kern_decode_batch_rows_count"), rows: value("kern_decode_batch_rows_sum") };
}

/// One server at `maxBatch`: the warm-up, the repetitions, the RSS check.
async function runConfig(maxBatch) {
  const server = new ServerProcess(kernRun, [plan, "--weights", weights, "--tokenizer", tokenizer, "--device", opt.device,
                                             "--max-batch", String(maxBatch),
                                             "--max-queue", String(Math.max(opt.clients, 1))]);
  await server.start();
  await server.waitReady();
  let failed = false;
  const rows = [];
  let text = "";
  const out = { maxBatch, failed: true };  // filled at the end; a stop that fails marks it failed
  try {
    await round(server.url, opt.clients * 2, opt.clients, 1e6);  // warm-up
    const occ0 = await occupancy(server.url);
    const rssWarm = rssKiB(server.proc.pid);
    let rssPeak = rssWarm;
    const sampler = setInterval(() => { rssPeak = Math.max(rssPeak, rssKiB(server.proc.pid)); }, 100);
    for (let r = 0; r < opt.repeats; r++) {
      const { results, seconds } = await round(server.url, opt.requests, opt.clients, r * opt.requests);
      const good = results.filter((x) => x.ok);
      const errors = results.length - good.length;
      for (const x of results.filter((x) => !x.ok).slice(0, 3)) console.error(`request failed: ${x.why}`);
      if (errors || results.length !== opt.requests) failed = true;
      const tokens = good.reduce((s, x) => s + x.tokens, 0);
      rows.push({ rps: good.length / seconds, tps: tokens / seconds, ttft50: pct(good.map((x) => x.ttft), 50),
                  ttft99: pct(good.map((x) => x.ttft), 99), itl50: pct(good.flatMap((x) => x.itls), 50),
                  itl99: pct(good.flatMap((x) => x.itls), 99), errors, complete: good.length });
    }
    clearInterval(sampler);
    const occ1 = await occupancy(server.url);
    await sleep(200);
    const rssEnd = rssKiB(server.proc.pid);
    const growthMiB = (rssEnd - rssWarm) / 1024;
    const bounded = growthMiB <= opt["rss-slack-mib"];
    if (!bounded) failed = true;
    const med = Object.fromEntries(Object.keys(rows[0]).map((k) => [k, median(rows.map((r) => r[k]))]));
    const meanRows = (occ1.rows - occ0.rows) / (occ1.steps - occ0.steps);
    const lost = rows.every((r) => r.complete === opt.requests) ? "every request got a complete response" : "SOME REQUESTS FAILED";
    text = [
      `## --max-batch ${maxBatch}`,
      ``,
      ...header,
      ...rows.map((r, i) => line(String(i + 1), r)),
      line("median", med),
      ``,
      `Decode batch occupancy: ${f(meanRows, 2)} sequences per decode step on average (${occ1.steps - occ0.steps} steps; kern_decode_batch_rows).`,
      `Server RSS: ${f(rssWarm / 1024)} MiB after the warm-up, peak ${f(rssPeak / 1024)} MiB, ${f(rssEnd / 1024)} MiB at the end ` +
        `(growth ${f(growthMiB)} MiB, limit ${opt["rss-slack-mib"]} MiB: ${bounded ? "bounded" : "NOT bounded"}).`,
      `Nothing lost: ${lost}.`,
      ``,
    ].join("\n");
    console.log(text);
    Object.assign(out, { med, meanRows, text, failed });
    return out;
  } finally {
    const code = await server.stop("SIGTERM");
    if (code !== 0) {
      console.error(`kern-run serve exited ${code}`);
      out.failed = true;
    }
  }
}

const runs = [];
for (const b of batches) runs.push(await runConfig(b));
const failed = runs.some((r) => r.failed);
const summary = [
  `# kern-run serve load test (bench/serve_load.mjs)`,
  ``,
  `${opt.clients} clients, ${opt.requests} streaming chat requests per repetition, max_tokens ${opt["max-tokens"]} (ignore_eos),`,
  `device ${opt.device}, ${path_base(plan)}; ${os.cpus().length} CPUs (${os.cpus()[0].model}), load average ${os.loadavg()[0].toFixed(1)}.`,
  `Latencies in ms; tok/s counts generated tokens; ${opt.repeats} repetitions per --max-batch, their medians here:`,
  ``,
  `| --max-batch | req/s | output tok/s | TTFT p50 | TTFT p99 | ITL p50 | ITL p99 | complete | errors | rows per decode step |`,
  `|---|---|---|---|---|---|---|---|---|---|`,
  ...runs.map((r) => line(String(r.maxBatch), r.med) + ` ${f(r.meanRows, 2)} |`),
  ``,
  ...runs.map((r) => r.text),
].join("\n");
if (runs.length > 1) console.log(summary);
if (opt.out) {
  writeFileSync(opt.out + ".tmp", summary);
  renameSync(opt.out + ".tmp", opt.out);
}
process.exit(failed ? 1 : 0);

function path_base(p) { return p.split("/").pop(); }
