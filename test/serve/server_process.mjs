// Starts and stops a real `kern-run serve` process for the server tests
// (llama.cpp's tools/server/tests/utils.py ServerProcess, in Node): a free
// loopback port (--port 0, read from the "listening on" log line), /health
// polled until 200, every wait bounded in time; `until` polls any state.
import { execFile, spawn } from "node:child_process";
import { promisify } from "node:util";

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/// Calls `probe` (async) until `ok` holds for its result, every `intervalMs`,
/// at most `timeoutMs` and 100000 calls (bounds far above what a loaded CI
/// machine needs: a test waits on a state, never on a time); returns the
/// last result whether or not `ok` held, for the caller's assertions.
export async function until(probe, ok, timeoutMs = 60000, intervalMs = 20) {
  const deadline = Date.now() + timeoutMs;
  let r;
  for (let i = 0; i < 100000; i++) {
    r = await probe();
    if (ok(r) || Date.now() >= deadline) return r;
    await sleep(intervalMs);
  }
  return r;
}

export class ServerProcess {
  /// `args`: kern-run serve's arguments after "serve"; `env`: extra environment.
  constructor(kernRun, args, env = {}) {
    this.kernRun = kernRun;
    this.args = args;
    this.env = env;
    this.log = "";
    this.exitCode = undefined;
  }

  /// Spawns the process and resolves with the base URL once it listens.
  async start(timeoutMs = 60000) {
    this.proc = spawn(this.kernRun, ["serve", ...this.args, "--host", "127.0.0.1", "--port", "0"], {
      env: { ...process.env, ...this.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    // "close", not "exit": it comes once stdout and stderr are read to
    // their end, so the log holds the last lines (e.g. "stopped").
    this.exited = new Promise((resolve) => this.proc.on("close", (code, signal) => {
      this.exitCode = code;
      this.exitSignal = signal;
      resolve(code);
    }));
    this.proc.stdout.on("data", (d) => { this.log += d.toString(); });
    this.proc.stderr.on("data", (d) => { this.log += d.toString(); });
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const m = this.log.match(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
      if (m) {
        this.url = m[1];
        return this.url;
      }
      if (this.exitCode !== undefined) throw new Error(`kern-run serve exited ${this.exitCode}:\n${this.log}`);
      await sleep(20);
    }
    throw new Error(`kern-run serve did not listen within ${timeoutMs} ms:\n${this.log}`);
  }

  /// Polls /health until 200.
  async waitReady(timeoutMs = 120000) {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      try {
        const r = await fetch(this.url + "/health", { signal: AbortSignal.timeout(10000) });
        if (r.status === 200) return;
      } catch {}
      if (this.exitCode !== undefined) throw new Error(`kern-run serve exited ${this.exitCode}:\n${this.log}`);
      await sleep(50);
    }
    throw new Error(`/health not 200 within ${timeoutMs} ms:\n${this.log}`);
  }

  /// Sends `signal` and resolves with the exit code (kills after `timeoutMs`).
  async stop(signal = "SIGTERM", timeoutMs = 60000) {
    if (this.exitCode !== undefined) return this.exitCode;
    this.proc.kill(signal);
    const timer = setTimeout(() => this.proc.kill("SIGKILL"), timeoutMs);
    const code = await this.exited;
    clearTimeout(timer);
    return code;
  }
}

/// Parses Prometheus text into {name -> [{labels, value}]}; throws on a line it cannot read.
export function parseMetrics(text) {
  const out = {};
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})? (\S+)$/);
    if (!m) throw new Error(`not a Prometheus sample line: ${JSON.stringify(line)}`);
    const labels = {};
    if (m[3]) for (const kv of m[3].split(",")) {
      const [k, v] = kv.split("=");
      labels[k] = JSON.parse(v);
    }
    const value = m[4] === "+Inf" ? Infinity : Number(m[4]);
    if (Number.isNaN(value)) throw new Error(`not a number: ${line}`);
    (out[m[1]] ??= []).push({ labels, value });
  }
  return out;
}

/// The single value of metric `name` (with `labels` when given), or 0 when absent.
export function metric(parsed, name, labels = {}) {
  const rows = (parsed[name] ?? []).filter((r) => Object.entries(labels).every(([k, v]) => r.labels[k] === v));
  return rows.length ? rows[0].value : 0;
}

/// Assertions and a bounded test runner shared by the server tests.
export function assert(cond, message) {
  if (!cond) throw new Error(message);
}
export function assertEq(actual, expected, what) {
  const a = JSON.stringify(actual), e = JSON.stringify(expected);
  if (a !== e) throw new Error(`${what}: expected ${e}, got ${a}`);
}

/// Counts failures of `test` calls; a test runs at most `timeoutMs`.
export class TestRunner {
  failures = 0;
  async test(name, fn, timeoutMs = 120000) {
    let timer;
    try {
      await Promise.race([fn(), new Promise((_, rej) => { timer = setTimeout(() => rej(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs); })]);
      console.log(`ok: ${name}`);
    } catch (e) {
      this.failures++;
      console.log(`FAIL: ${name}\n  ${e.stack ?? e}`);
    } finally {
      clearTimeout(timer);
    }
  }
}

const execFileP = promisify(execFile);

/// curl: returns {status, body (parsed JSON when it is JSON)}.
export async function curl(url, args = []) {
  const { stdout } = await execFileP("curl", ["-s", "-m", "60", "-w", "\n%{http_code}", ...args, url], { maxBuffer: 64 << 20 });
  const cut = stdout.lastIndexOf("\n");
  const text = stdout.slice(0, cut);
  let body = text;
  try { body = JSON.parse(text); } catch {}
  return { status: Number(stdout.slice(cut + 1)), body };
}

/// An OpenAI error response with `status`: returns its error object.
export function checkError(r, status, what) {
  assertEq(r.status, status, `${what}: status`);
  assert(r.body && r.body.error && typeof r.body.error.message === "string", `${what}: no error object in ${JSON.stringify(r.body).slice(0, 300)}`);
  for (const k of ["message", "type", "param", "code"]) assert(k in r.body.error, `${what}: error.${k} missing`);
  return r.body.error;
}
