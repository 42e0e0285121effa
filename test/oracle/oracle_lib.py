"""The llama.cpp oracle (oracles.md) and the comparison rule shared by the
oracle tests: locating node-llama-cpp's cache, building the C oracle,
converting weights to GGUF, running it, and judging another implementation's
greedy run against it.

Comparison rule (teacher forcing). The oracle is fed the prompt and then the
other implementation's own generated ids, so row i of its logits is
llama.cpp's next-token distribution in exactly the context in which the other
side chose id i. For every step i:
  - id i must equal the oracle's argmax of row i, unless row i is a genuine
    near-tie: oracle[best] - oracle[id i] <= TOL (then it is counted; at most
    MAX_NEAR_TIES per run). Up to the first such step the two greedy
    sequences are therefore identical; after it, each id is still checked
    against the oracle in the same context instead of being abandoned;
  - the last step's logits (the step that produced the last id) must be
    within TOL of the oracle's row, element by element.
TOL = TOL_FRACTION * (max - min of the oracle's row), i.e. relative to the
logit spread, because every error source below is relative.

Why 3% of the spread. kern stores every activation in bf16 (unit roundoff
u = 2^-9 = 0.2%), llama.cpp keeps its residual stream, norms, attention and
KV cache (f32 here) in f32 and rounds only matmul inputs to bf16. Per layer
about 8 bf16 stores sit on the path to the logits (residual x2, normed x2,
qkv, q/k norm, rope, attn_out, proj, gate_up, act); independent roundings add
in quadrature, and the layers amplify them (weights at 4/sqrt(fan_in)), and
kern's logits themselves are bf16 (<= 0.4% of |logit|). For the 2-layer tiny
model, sqrt(16) * u ~= 0.8% before amplification; the measured worst case of
our numpy model of kern against llama.cpp over all 5 prompts x 24 steps is
0.7-1.3% of the spread (and 0.3-0.6% on the last step). 3% leaves a 2x
margin while a wrong pipeline is far outside it: interleaved instead of neox
RoPE moves the logits by 50-80% of the spread (see the teeth checks).
"""

import os
import subprocess

import numpy as np

TOL_FRACTION = 0.03
MAX_NEAR_TIES = 3
NPM_BINS = os.path.join("node_modules", "@node-llama-cpp", "linux-x64", "bins", "linux-x64")
PROMPT_LENGTHS = (1, 15, 16, 17, 40)
STEPS = 24


class OracleSetupError(Exception):
    """The oracle's npm packages or bundle are missing (run scripts/setup.sh)."""


def prompt_ids(length, vocab):
    """Deterministic prompt ids: 11, 48, 85, ... (step 37, mod vocab)."""
    return [(11 + 37 * i) % vocab for i in range(length)]


class Oracle:
    """A built llama.cpp oracle for one GGUF model."""

    def __init__(self, source_root, work_dir):
        cache = os.path.join(source_root, ".cache", "oracle")
        self.bins = os.path.join(cache, NPM_BINS)
        self.llama = os.path.join(cache, "llama.cpp")
        self.gguf_py = os.path.join(self.llama, "gguf-py")
        for path in (self.bins, os.path.join(self.llama, "include", "llama.h"), self.gguf_py):
            if not os.path.exists(path):
                raise OracleSetupError(f"{path} is missing: run scripts/setup.sh (installs node-llama-cpp "
                                       f"into .cache/oracle)")
        self.here = os.path.dirname(os.path.abspath(__file__))
        self.work = work_dir
        self.exe = os.path.join(work_dir, "llama_oracle")
        libs = [os.path.join(self.bins, n) for n in sorted(os.listdir(self.bins))
                if n.startswith(("libllama.", "libggml.", "libggml-base.")) and n.endswith(".so")]
        subprocess.run(["cc", "-O1", "-Wall", "-Wextra", "-Werror", "-o", self.exe,
                        os.path.join(self.here, "llama_oracle.c"),
                        "-I", os.path.join(self.llama, "include"), "-I", os.path.join(self.llama, "ggml", "include"),
                        *libs, "-Wl,-rpath," + os.path.abspath(self.bins)], check=True)
        self.gguf = None
        self.vocab = None

    def load(self, config_path, weights_path, vocab):
        """Converts exported weights to the GGUF the oracle runs."""
        self.gguf = os.path.join(self.work, "model.gguf")
        self.vocab = vocab
        subprocess.run(["/usr/bin/python3", os.path.join(self.here, "gguf_from_exported.py"), config_path,
                        weights_path, "-o", self.gguf, "--gguf-py", self.gguf_py], check=True)

    def run(self, prompt, steps, forced=None):
        """(argmax ids [steps], f32 logits [steps, vocab]); `forced` = teacher-forced ids."""
        cmd = [self.exe, self.bins, self.gguf, str(self.vocab), str(steps), ",".join(map(str, prompt))]
        if forced is not None:
            cmd.append(",".join(map(str, forced)))
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip().split("\n")
        ids = [int(x) for x in out[0].split()[1].split(",")]
        rows = np.array([[float(v) for v in line.split()[1:]] for line in out[1:]], dtype=np.float64)
        if len(ids) != steps or rows.shape != (steps, self.vocab):
            raise RuntimeError(f"llama_oracle printed {len(ids)} ids and rows {rows.shape}, expected {steps}")
        return ids, rows


def changes(prompt, ids):
    """How many generated ids differ from their predecessor (the first's is the last prompt id)."""
    prev = [prompt[-1]] + list(ids[:-1])
    return sum(1 for a, b in zip(prev, ids) if a != b)


def compare(prompt, ids, last_logits, oracle_rows):
    """Judges a greedy run (ids, f32 logits of the last step) against the
    oracle's teacher-forced rows. Returns (ok, report lines)."""
    report, ok = [], True
    near_ties = []
    for i, chosen in enumerate(ids):
        row = oracle_rows[i]
        best = int(np.argmax(row))
        if chosen == best:
            continue
        tol = TOL_FRACTION * (row.max() - row.min())
        gap = row[best] - row[chosen]
        if gap <= tol:
            near_ties.append(i)
            report.append(f"step {i}: id {chosen} vs oracle {best}: near-tie, oracle gap {gap:.4f} <= {tol:.4f}")
        else:
            ok = False
            report.append(f"step {i}: id {chosen} vs oracle {best}: oracle gap {gap:.4f} > tolerance {tol:.4f}")
    if len(near_ties) > MAX_NEAR_TIES:
        ok = False
        report.append(f"{len(near_ties)} near-ties exceed the limit {MAX_NEAR_TIES}")
    row = oracle_rows[-1]
    tol = TOL_FRACTION * (row.max() - row.min())
    diff = float(np.abs(np.asarray(last_logits, dtype=np.float64) - row).max())
    if diff > tol:
        ok = False
    report.append(f"last-step logits: max |diff| {diff:.4f} (tolerance {tol:.4f}, spread {row.max() - row.min():.3f})")
    n = changes(prompt, ids)
    report.append(f"{n}/{len(ids)} generated ids differ from their predecessor")
    return ok, report
