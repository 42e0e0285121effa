// Time to first token of a growing conversation with the prefix cache on and
// off (issue 39): starts the real `kern-run serve` twice (the default, then
// --no-prefix-cache) on a free loopback port, and on each runs the same
// conversation: every turn resends the whole history plus one new user
// message (as chat clients do) and streams the reply, timing the first
// content chunk from the request's send. Each repetition is a new
// conversation (its system prompt names the repetition, so no repetition
// hits another's pages); the table's TTFT is the median per turn over the
// repetitions, side by side, with the prompt tokens and the cached tokens
// the server reported (usage.prompt_tokens_details.cached_tokens). The two
// servers run one after another on one machine: compare the columns, not the
// absolute times across machines. Exit 1 when a check fails (a turn without
// usage, or a cache-off turn reporting cached tokens).
// usage: node bench/prefix_cache_ttft.mjs KERN_RUN PLAN TOKENIZER [--weights W | --random-weights SEED]
//        [--device cpu] [--turns 6] [--words 60] [--max-tokens 8] [--repeats 3] [--capacity 4096] [--out FILE.md]
import { renameSync, writeFileSync } from "node:fs";
import os from "node:os";

import { ServerProcess } from "../test/serve/server_process.mjs";

const [kernRun, plan, tokenizer, ...rest] = process.argv.slice(2);
const opt = { weights: "", "random-weights": "1", device: "cpu", turns: 6, words: 60, "max-tokens": 8, repeats: 3,
              capacity: 4096, out: "" };
for (let i = 0; i < rest.length; i += 2) {
  const k = rest[i].replace(/^--/, "");
  if (!(k in opt) || rest[i + 1] === undefined) {
    console.error(`prefix_cache_ttft.mjs: unknown option or missing value: ${rest[i]}`);
    process.exit(2);
  }
  opt[k] = typeof opt[k] === "number" ? Number(rest[i + 1]) : rest[i + 1];
}
if (!tokenizer) {
  console.error("usage: node bench/prefix_cache_ttft.mjs KERN_RUN PLAN TOKENIZER [options]");
  process.exit(2);
}
for (const k of ["turns", "words", "max-tokens", "repeats", "capacity"])
  if (!Number.isInteger(opt[k]) || opt[k] < 1) {
    console.error(`prefix_cache_ttft.mjs: --${k} ${opt[k]}: expected an integer >= 1`);
    process.exit(2);
  }

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
let failures = 0;
const check = (ok, what) => {
  if (!ok) {
    console.error(`FAIL: ${what}`);
    failures++;
  }
};

/// A user message of about `opt.words` words, different per turn.
const message = (turn) =>
  `Turn ${turn}. ` + Array.from({ length: opt.words }, (_, i) => `word${(turn * 7919 + i * 104729) % 5000}`).join(" ");

/// One streamed chat request: its TTFT (ms from the send to the first content chunk), reply text and usage.
async function streamTurn(url, messages) {
  const t0 = performance.now();
  const res = await fetch(url + "/v1/chat/completions", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ messages, max_tokens: opt["max-tokens"], temperature: 0, ignore_eos: true, stream: true,
                           stream_options: { include_usage: true }, chat_template_kwargs: { enable_thinking: false } }),
  });
  if (res.status !== 200) throw new Error(`status ${res.status}: ${await res.text()}`);
  let ttft = NaN, text = "", usage = null, buf = "";
  const decoder = new TextDecoder();
  for await (const part of res.body) {
    buf += decoder.decode(part, { stream: true });
    let nl;
    while ((nl = buf.indexOf("\n\n")) >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 2);
      if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
      const chunk = JSON.parse(line.slice(6));
      if (chunk.usage) usage = chunk.usage;
      const delta = chunk.choices?.[0]?.delta?.content;
      if (delta) {
        if (Number.isNaN(ttft)) ttft = performance.now() - t0;
        text += delta;
      }
    }
  }
  return { ttft, text, usage };
}

/// Runs the conversations on one server; per turn, per repetition: {ttft, prompt, cached}.
async function runServer(cache) {
  const load = opt.weights ? ["--weights", opt.weights] : ["--random-weights", opt["random-weights"]];
  const args = [plan, ...load, "--tokenizer", tokenizer, "--device", opt.device, "--capacity", String(opt.capacity),
                "--max-batch", "1", ...(cache ? [] : ["--no-prefix-cache"])];
  const server = new ServerProcess(kernRun, args);
  await server.start(1800000);
  await server.waitReady(1800000);
  const turns = Array.from({ length: opt.turns }, () => []);
  try {
    // A warm-up request (first-use costs: graphs, page faults), not timed.
    await streamTurn(server.url, [{ role: "user", content: "warm up" }]);
    for (let r = 0; r < opt.repeats; r++) {
      const history = [{ role: "system", content: `Conversation ${r} of the prefix cache benchmark.` }];
      for (let t = 0; t < opt.turns; t++) {
        history.push({ role: "user", content: message(t) });
        const { ttft, text, usage } = await streamTurn(server.url, history);
        check(usage !== null && usage.prompt_tokens_details !== undefined, `turn ${t + 1}: usage with cached_tokens`);
        const cached = usage?.prompt_tokens_details?.cached_tokens ?? 0;
        if (!cache) check(cached === 0, `cache off, turn ${t + 1}: ${cached} cached tokens`);
        turns[t].push({ ttft, prompt: usage?.prompt_tokens ?? 0, cached });
        history.push({ role: "assistant", content: text });
      }
    }
  } finally {
    await server.stop("SIGTERM");
  }
  return turns;
}

const on = await runServer(true);
const off = await runServer(false);
const rows = [];
rows.push("| turn | prompt tokens | cached (on) | TTFT on, ms | TTFT off, ms | off / on |");
rows.push("|---:|---:|---:|---:|---:|---:|");
for (let t = 0; t < opt.turns; t++) {
  const tOn = median(on[t].map((x) => x.ttft)), tOff = median(off[t].map((x) => x.ttft));
  rows.push(`| ${t + 1} | ${median(on[t].map((x) => x.prompt))} | ${median(on[t].map((x) => x.cached))} | ` +
            `${tOn.toFixed(0)} | ${tOff.toFixed(0)} | ${(tOff / tOn).toFixed(2)} |`);
}
const cpu = os.cpus()[0]?.model ?? "unknown CPU";
const header = [
  `# TTFT of a growing conversation, prefix cache on vs off (${opt.device} device)`,
  "",
  `\`node bench/prefix_cache_ttft.mjs ${[kernRun, plan, tokenizer, ...rest].join(" ")}\``,
  "",
  `${os.cpus().length} x ${cpu}; load average ${os.loadavg().map((x) => x.toFixed(2)).join(", ")} at the end; ` +
  `${opt.turns} turns of about ${opt.words} words each, ${opt["max-tokens"]} reply tokens, median of ${opt.repeats} ` +
  "conversations per turn; each turn resends the whole history.",
  "",
];
const table = [...header, ...rows, ""].join("\n");
console.log(table);
if (opt.out) {
  const tmp = opt.out + ".tmp";
  writeFileSync(tmp, table);
  renameSync(tmp, opt.out);
}
process.exit(failures ? 1 : 0);
