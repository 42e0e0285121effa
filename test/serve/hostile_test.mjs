// kern-run serve against hostile clients (issue 48; docs/serving.md "Limits
// and hostile clients"): a real server process on loopback, attacked with
// raw TCP sockets and curl the way the attacker did, each attack
// checked for its clear 4xx (or a refused start), for the server's peak
// memory (VmHWM) growing by less than 64 MB, for /health answering all the
// while, and for a streaming client beside it getting its whole answer.
// Every wait is bounded in count and time; exit 77 (skip) with the reason
// when curl or the tokenizer is missing.
// usage: node hostile_test.mjs KERN_RUN PLAN WEIGHTS TOKENIZER
import { execFile, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import net from "node:net";
import { promisify } from "node:util";

import { ServerProcess, TestRunner, assert, assertEq, checkError, curl, sleep } from "./server_process.mjs";

const [kernRun, plan, weights, tokenizer] = process.argv.slice(2);
if (!existsSync(tokenizer)) {
  console.log(`SKIP: Qwen3's tokenizer.json is not at ${tokenizer} (scripts/setup.sh installs it)`);
  process.exit(77);
}
const run = promisify(execFile);
try {
  await run("curl", ["--version"]);
} catch {
  console.log("SKIP: curl is not installed");
  process.exit(77);
}

const MiB = 1 << 20;
const base = [plan, "--weights", weights, "--tokenizer", tokenizer, "--device", "cpu", "--served-model-name", "tiny",
              "--capacity", "64", "--max-body-bytes", String(MiB)];
const runner = new TestRunner();
const test = runner.test.bind(runner);

/// The server's peak resident memory so far, in bytes (VmHWM).
function peakBytes(server) {
  const m = readFileSync(`/proc/${server.proc.pid}/status`, "utf8").match(/VmHWM:\s+(\d+) kB/);
  return Number(m[1]) * 1024;
}

/// POSTs `text` as the body (through stdin, so its size is not bounded by argv).
function post(url, text, headers = ["Content-Type: application/json"]) {
  return new Promise((resolve, reject) => {
    const args = ["-s", "-m", "60", "-w", "\n%{http_code}", "-X", "POST", "--data-binary", "@-"];
    for (const h of headers) args.push("-H", h);
    const child = spawn("curl", [...args, url], { stdio: ["pipe", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (d) => { out += d; });
    child.on("error", reject);
    child.on("close", () => {
      const cut = out.lastIndexOf("\n");
      let body = out.slice(0, cut);
      try { body = JSON.parse(body); } catch {}
      resolve({ status: Number(out.slice(cut + 1)), body });
    });
    child.stdin.on("error", () => {});
    child.stdin.end(text);
  });
}

/// Sends `chunks` (strings or Buffers, or a generator of them) on a raw
/// connection, reading all the while; resolves with what the server sent
/// once it closed the connection, or `idleMs` passed without news, or
/// `until(received)` holds. The first bytes received, or a write error (the
/// server closed first), end the writing, not the test.
function rawExchange(url, chunks, { idleMs = 15000, until = () => false, pauseMs = 0 } = {}) {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const sock = net.connect(Number(port), hostname);
    let received = "";
    let done = false;
    let idle;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(idle);
      sock.destroy();
      resolve(received);
    };
    const arm = () => { clearTimeout(idle); idle = setTimeout(finish, idleMs); };
    sock.on("data", (d) => { received += d.toString("latin1"); arm(); if (until(received)) finish(); });
    sock.on("close", finish);
    sock.on("error", finish);
    sock.on("connect", async () => {
      arm();
      for (const c of chunks) {
        // An answer ends the writing: the server refused the request, and
        // bytes written after its close would reset the connection (losing
        // the answer not yet read).
        if (done || sock.destroyed || received.length > 0) break;
        if (!sock.write(c)) await new Promise((r) => { sock.once("drain", r); sock.once("close", r); });
        await new Promise((r) => setImmediate(r));  // let 'data' arrive between writes
        if (pauseMs) await sleep(pauseMs);
      }
    });
  });
}
const statusOf = (raw) => Number((raw.match(/^HTTP\/1\.1 (\d{3})/) ?? [])[1] ?? 0);

/// /health while `attack` runs: probes every 100 ms, each bounded at 10 s;
/// throws if one fails; returns the attack's result and the slowest probe.
async function withProbes(url, attack) {
  let stop = false, slowest = 0, probes = 0, bad = null;
  const loop = (async () => {
    for (let i = 0; i < 10000 && !stop; i++) {
      const t0 = Date.now();
      try {
        const r = await fetch(url + "/health", { signal: AbortSignal.timeout(10000) });
        if (r.status !== 200) bad ??= `status ${r.status}`;
        await r.text();
      } catch (e) {
        bad ??= String(e);
      }
      slowest = Math.max(slowest, Date.now() - t0);
      probes++;
      await sleep(100);
    }
  })();
  try {
    return { result: await attack(), slowest };
  } finally {
    stop = true;
    await loop;
    assert(bad === null, `/health failed during the attack: ${bad}`);
    assert(probes > 0, "no probe ran");
  }
}

/// A streaming greedy completion beside the attack: its text must equal the solo text.
async function streamText(url) {
  const r = await fetch(url + "/v1/completions", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ prompt: "The capital of France is", max_tokens: 40, temperature: 0, stream: true, ignore_eos: true }),
    signal: AbortSignal.timeout(60000),
  });
  assertEq(r.status, 200, "the bystander's stream status");
  const text = await r.text();
  assert(text.includes("data: [DONE]"), `the bystander's stream did not end with [DONE]: ${text.slice(-200)}`);
  return text.split("\n").filter((l) => l.startsWith("data: {")).map((l) => JSON.parse(l.slice(6)).choices?.[0]?.text ?? "").join("");
}

/// Runs `attack` with probes and a bystander stream; checks the peak memory growth.
async function hostile(server, soloText, what, attack) {
  const before = peakBytes(server);
  const bystander = streamText(server.url);
  const { result, slowest } = await withProbes(server.url, attack);
  assertEq(await bystander, soloText, `${what}: the bystander's text`);
  const grown = peakBytes(server) - before;
  console.log(`  ${what}: peak memory +${(grown / MiB).toFixed(1)} MiB, slowest /health ${slowest} ms`);
  assert(grown < 64 * MiB, `${what}: the server's peak memory grew by ${(grown / MiB).toFixed(1)} MiB (bound 64)`);
  assertEq(server.exitCode, undefined, `${what}: the server exited`);
  return result;
}

// A slow step (50 ms) keeps the bystander's 40 tokens streaming through each attack.
const server = new ServerProcess(kernRun, [...base, "--header-timeout", "3", "--body-timeout", "3"],
                                 { KERN_SERVE_TEST_STEP_DELAY_MS: "50" });
await server.start();
await server.waitReady();
const url = server.url;
const solo = await streamText(url);

await test("a body nested 300,000 deep is 400 naming the depth and byte offset, on every JSON route", async () => {
  const deep = "[".repeat(300000);
  await hostile(server, solo, "nesting", async () => {
    for (const route of ["/v1/completions", "/v1/chat/completions", "/tokenize"]) {
      const e = checkError(await post(url + route, deep), 400, route);
      assert(/nest deeper than 128 levels \(at byte 128\)/.test(e.message), `${route}: ${e.message}`);
    }
  });
});

await test("a chunked body past --max-body-bytes is 413, read no further than the limit", async () => {
  const chunk = Buffer.alloc(64 << 10, 0x20);
  function* body() {
    yield "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (let i = 0; i < 512; i++) yield Buffer.concat([Buffer.from(chunk.length.toString(16) + "\r\n"), chunk, Buffer.from("\r\n")]);  // 32 MiB
  }
  const raw = await hostile(server, solo, "chunked 32 MiB", () => rawExchange(url, body(), { until: (r) => r.includes("\r\n\r\n{") && r.endsWith("}") }));
  assertEq(statusOf(raw), 413, `chunked body: ${raw.slice(0, 200)}`);
  assert(raw.includes("--max-body-bytes"), raw);
});

await test("a Content-Length past --max-body-bytes is 413 before the body is read", async () => {
  const raw = await rawExchange(url, [`POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: ${400 * MiB}\r\n\r\n{`],
                                { until: (r) => r.endsWith("}") });
  assertEq(statusOf(raw), 413, raw.slice(0, 200));
});

await test("a gzip body is 415 (kern accepts no Content-Encoding)", async () => {
  const r = await post(url + "/v1/completions", "\x1f\x8b\x08\x00", ["Content-Type: application/json", "Content-Encoding: gzip"]);
  const e = checkError(r, 415, "gzip");
  assert(e.message.includes("gzip"), e.message);
});

await test("a Transfer-Encoding other than chunked is 501; a known path with another method is 405", async () => {
  const te = await rawExchange(url, ["POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"],
                               { until: (r) => r.endsWith("}") });
  assertEq(statusOf(te), 501, te.slice(0, 200));
  assert(te.includes("unsupported_transfer_encoding"), te);
  const e = checkError(await curl(url + "/health", ["-X", "POST"]), 405, "POST /health");
  assertEq(e.code, "method_not_allowed", "code");
});

await test("24,000 headers of 8 KB are 431, and 101 small ones too", async () => {
  const value = "v".repeat(8192);
  function* head() {
    yield "GET /health HTTP/1.1\r\nHost: x\r\n";
    for (let i = 0; i < 24000; i++) yield `X-Pad-${i}: ${value}\r\n`;
    yield "\r\n";
  }
  const raw = await hostile(server, solo, "headers", () => rawExchange(url, head(), { until: (r) => r.endsWith("}") }));
  assertEq(statusOf(raw), 431, raw.slice(0, 200));
  const many = await rawExchange(url, ["GET /health HTTP/1.1\r\nHost: x\r\n" + Array.from({ length: 100 }, (_, i) => `X-${i}: 1\r\n`).join("") + "\r\n"],
                                 { until: (r) => r.endsWith("}") });
  assertEq(statusOf(many), 431, many.slice(0, 300));
  assert(many.includes("at most 100"), many);
  const fine = await rawExchange(url, ["GET /health HTTP/1.1\r\nHost: x\r\n" + Array.from({ length: 98 }, (_, i) => `X-${i}: 1\r\n`).join("") + "\r\n"],
                                 { until: (r) => r.endsWith("}") });
  assertEq(statusOf(fine), 200, fine.slice(0, 300));
});

await test("a field name with escapes and a newline is logged escaped, never raw", async () => {
  const name = "\u001b]0;pwned\u0007\u001b[2J\nkern-run: info: FORGED";
  const before = server.log.length;
  const r = await post(url + "/v1/completions", JSON.stringify({ prompt: "hi", max_tokens: 1, [name]: 1 }));
  assertEq(r.status, 200, `status (${JSON.stringify(r.body).slice(0, 200)})`);
  const deadline = Date.now() + 10000;
  while (!server.log.slice(before).includes("not used by kern") && Date.now() < deadline) await sleep(20);
  const logged = server.log.slice(before);
  assert(logged.includes("not used by kern"), `the ignored field was not logged: ${logged}`);
  assert(!/[\u0000-\u0008\u000b-\u001f\u007f]/.test(logged), `control bytes reached the log: ${JSON.stringify(logged)}`);
  assert(!/\nkern-run: info: FORGED/.test(logged), `a forged log line: ${JSON.stringify(logged)}`);
});

await test("new field names flood neither the log nor the memory", async () => {
  const logBefore = server.log.length;
  await hostile(server, solo, "field names", async () => {
    for (let i = 0; i < 20; i++) {
      const obj = { prompt: "hi", max_tokens: 1 };
      for (let j = 0; j < 25000; j++) obj[`field_${i}_${j}_${"n".repeat(8)}`] = 0;  // ~800 KB of new names
      const r = await post(url + "/v1/completions", JSON.stringify(obj));
      assertEq(r.status, 200, `request ${i}`);
    }
  });
  const logged = server.log.length - logBefore;
  assert(logged < 64 * 1024, `the log grew by ${logged} bytes for 500,000 unknown names`);
});

await test("pipelined requests in one packet get one response each, in order", async () => {
  const two = "GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n";
  const raw = await rawExchange(url, [two], { until: (r) => (r.match(/HTTP\/1\.1 200/g) ?? []).length === 2 && r.endsWith("]}") });
  assertEq((raw.match(/HTTP\/1\.1 200/g) ?? []).length, 2, `responses: ${raw}`);
  assert(raw.indexOf('"status":"ok"') < raw.indexOf('"object":"list"'), `order: ${raw}`);
});

await test("a request head that does not arrive within --header-timeout is 408 and closed", async () => {
  const t0 = Date.now();
  const raw = await rawExchange(url, ["GET /health HTTP/1.1\r\n", "X-Slow: 1\r\n"], { pauseMs: 1000, idleMs: 20000 });
  assertEq(statusOf(raw), 408, raw);
  assert(Date.now() - t0 < 20000, "the connection was held past 20 s");
  const body = await rawExchange(url, ["POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"], { idleMs: 20000 });
  assertEq(statusOf(body), 408, body);
});

await test("a prompt that cannot fit is refused before it is tokenized", async () => {
  const cjk = "漢".repeat(300000);  // 900 KB
  const e = checkError(await post(url + "/v1/completions", JSON.stringify({ prompt: cjk, max_tokens: 1 })), 400, "cjk");
  assertEq(e.code, "context_length_exceeded", "code");
  assert(e.message.includes("refused before tokenizing"), e.message);
});

await test("prompt + max_tokens = capacity is accepted, one more is refused, streaming and not", async () => {
  const prompt = Array.from({ length: 60 }, (_, i) => i + 10);
  for (const stream of [false, true]) {
    const ok = await post(url + "/v1/completions", JSON.stringify({ prompt, max_tokens: 4, temperature: 0, ignore_eos: true, stream }));
    assertEq(ok.status, 200, `stream ${stream}: 60 + 4 = 64 (${JSON.stringify(ok.body).slice(0, 200)})`);
    if (!stream) assertEq(ok.body.usage.completion_tokens, 4, "completion tokens");
    else assert(String(ok.body).includes('"finish_reason":"length"'), String(ok.body).slice(-300));
    const over = checkError(await post(url + "/v1/completions", JSON.stringify({ prompt, max_tokens: 5, stream })), 400, `stream ${stream}: 60 + 5`);
    assertEq(over.code, "context_length_exceeded", "code");
  }
});

await test("a second server on the same port is refused at start, naming the address, before the model loads", async () => {
  const port = new URL(url).port;
  const second = spawn(kernRun, ["serve", ...base, "--host", "127.0.0.1", "--port", port], { stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  second.stdout.on("data", (d) => { log += d; });
  second.stderr.on("data", (d) => { log += d; });
  const code = await new Promise((resolve) => {
    const timer = setTimeout(() => second.kill("SIGKILL"), 30000);
    second.on("close", (c) => { clearTimeout(timer); resolve(c); });
  });
  assertEq(code, 2, `exit code, kern-run's for I/O errors (log: ${log})`);
  assert(log.includes(`--host 127.0.0.1 --port ${port}`) && /in use/.test(log), log);
  assert(!log.includes("ready: model") && !log.includes("loaded "), log);
  const r = await curl(url + "/v1/models");
  assertEq(r.body.data[0].id, "tiny", "the first server still answers");
});

// Slow clients: connections that send one header line a second hold no
// thread: probes answer throughout, and past --max-connections a client gets 503.
const slow = new ServerProcess(kernRun, [...base, "--header-timeout", "60", "--max-connections", "110"]);
await slow.start();
await slow.waitReady();
await test("100 slow-loris connections starve nothing; past --max-connections a connection gets 503", async () => {
  const line = Array.from({ length: 12 }, (_, i) => `X-Slow-${i}: 1\r\n`);
  const lorises = Array.from({ length: 100 }, () => rawExchange(slow.url, ["GET /health HTTP/1.1\r\n", ...line], { pauseMs: 1000, idleMs: 20000 }));
  await sleep(1000);
  const { slowest } = await withProbes(slow.url, async () => {
    await sleep(6000);
    // 100 lorises + the probe: the next connections pass 110.
    const extra = await Promise.all(Array.from({ length: 12 }, () => rawExchange(slow.url, [], { idleMs: 3000, until: (r) => r.endsWith("}") })));
    const refused = extra.filter((r) => statusOf(r) === 503);
    assert(refused.length > 0 && refused[0].includes("--max-connections"), `no 503 among ${extra.map(statusOf)}`);
  });
  console.log(`  slow loris: slowest /health ${slowest} ms`);
  for (const l of lorises) l.catch(() => {});
});
await slow.stop("SIGKILL");

const code = await server.stop();
assertEq(code, 0, "exit code after SIGTERM");
console.log(runner.failures === 0 ? "all hostile-client tests passed" : `${runner.failures} failed`);
process.exit(runner.failures === 0 ? 0 : 1);
