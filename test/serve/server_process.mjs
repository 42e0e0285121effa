// Starts and stops a real `kern-run serve` process for the server tests
// (llama.cpp's tools/server/tests/utils.py ServerProcess, in Node): a free
// loopback port (--port 0, read from the "listening on" log line), /health
// polled until 200, every wait bounded in time; `until` polls any state.
import { spawn } from "node:child_process";

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
