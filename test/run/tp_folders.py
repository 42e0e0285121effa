"""Model folders for the tensor-parallelism tests (docs/parallel.md), shared
by test/run/tp_test.py (cpu ranks over Gloo) and
test/sim/driver/tp_sim_test.py (cuda ranks over the simulated NCCL)."""

import json
import os
import shutil
import subprocess
import time

# Untied, GQA 8 query heads over 4 KV heads (TP = 4 divides them), 2 layers,
# dimensions that are not powers of two.
ODD = {
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 96, "num_attention_heads": 8,
    "num_key_value_heads": 4, "head_dim": 24, "intermediate_size": 160, "num_hidden_layers": 2,
    "vocab_size": 301, "max_position_embeddings": 4096, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "bos_token_id": 1, "eos_token_id": 2,
}


def tool(root, script, *args):
    """Runs provider/SCRIPT with Debian's python3; raises with its stderr when it fails."""
    proc = subprocess.run(["/usr/bin/python3", os.path.join(root, "provider", script), *args],
                          capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise AssertionError(f"{script} {' '.join(args)}: exit {proc.returncode}\n{proc.stderr}")
    return proc


def make_folder(root, kern_verify, tmp, name, config, weights, tp):
    """A model folder for `tp` ranks under `tmp`: the plan of gen_manifest --tp
    (unpinned, 64 tokens) and the weights (whole at TP = 1, else the shards)."""
    folder = os.path.join(tmp, f"{name}-tp{tp}")
    os.makedirs(folder)
    manifest = os.path.join(folder, "manifest.json")
    tool(root, "gen_manifest.py", config, "-o", manifest, "--tp", str(tp), "--unpinned", "--tokens-max", "64")
    proc = subprocess.run([kern_verify, manifest, "-o", os.path.join(folder, "model.kplan")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    if tp == 1:
        shutil.copyfile(weights, os.path.join(folder, "weights.safetensors"))
    else:
        tool(root, "shard_weights.py", config, weights, "--tp", str(tp), "-o", folder)
    return folder


def make_tiny_and_odd(root, kern_verify, tmp):
    """The two models both TP tests run: ({tp: folder} of the tiny example
    at TP 1 and 2, {tp: folder} of a random checkpoint of ODD at TP 1, 2
    and 4), under `tmp`."""
    tiny_cfg = os.path.join(root, "examples", "tiny-qwen3.config.json")
    tiny_w = os.path.join(root, "examples", "tiny-qwen3.safetensors")
    tiny = {tp: make_folder(root, kern_verify, tmp, "tiny", tiny_cfg, tiny_w, tp) for tp in (1, 2)}
    odd_cfg = os.path.join(tmp, "odd.config.json")
    with open(odd_cfg, "w", encoding="utf-8") as f:
        json.dump(ODD, f)
    odd_w = os.path.join(tmp, "odd.safetensors")
    tool(root, "gen_random_weights.py", odd_cfg, "-o", odd_w, "--seed", "3")
    odd = {tp: make_folder(root, kern_verify, tmp, "odd", odd_cfg, odd_w, tp) for tp in (1, 2, 4)}
    return tiny, odd


def curl(*args, timeout=60):
    """(exit status, stdout) of curl -s with a bounded time."""
    proc = subprocess.run(["curl", "-s", "--max-time", str(timeout), *args], capture_output=True, text=True,
                          timeout=timeout + 10)
    return proc.returncode, proc.stdout


def start_serve(cmd, log, env=None, timeout=60):
    """Starts `cmd` (a kern-run serve command line listening on 127.0.0.1
    port 0) with stderr into `log`, and returns (process, base URL) once
    /health answers ok; raises if it exits or is not ready within `timeout` s."""
    with open(log, "w", encoding="utf-8") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env)
    deadline = time.monotonic() + timeout
    url = None
    while url is None and time.monotonic() < deadline and proc.poll() is None:
        with open(log, encoding="utf-8", errors="replace") as f:
            url = next((line.split("listening on ", 1)[1].split()[0] for line in f if "listening on http://" in line),
                       None)
        time.sleep(0.05)
    while url is not None and time.monotonic() < deadline and proc.poll() is None:
        if curl(f"{url}/health", timeout=5)[1] == '{"status":"ok"}':
            return proc, url
        time.sleep(0.1)
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    with open(log, encoding="utf-8", errors="replace") as f:
        raise AssertionError(f"serve not ready (exit {proc.returncode}):\n{f.read()}")
