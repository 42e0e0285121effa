#!/usr/bin/python3
"""oracle_families_test.py SOURCE_ROOT KERN_VERIFY KERN_RUN

kern against llama.cpp (oracles.md) for the Llama and Qwen2 families
(issue 40): random-weight HF checkpoints of odd shapes (head_dim 16, 32, 64,
128; MHA and GQA; tied and untied; llama3 rope scaling with a small
original_max_position_embeddings, so the scaling acts within the run; a
Mistral config whose attention is a Llama one; Qwen2.5-style q, k, v
biases) go through convert_hf.py and
`kern-run MODEL_DIR` on the cpu device; the 24 greedy ids from a 17-token
prompt, at prefill chunks 1, 5 and 17, must agree with llama.cpp on the same
weights (a `llama` or `qwen2` GGUF, gguf_from_exported.py) up to near-ties classified
from kern's own logits by oracle_lib.compare (teacher forcing). Exit 77 when
kern-run is not built.
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "provider"))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))

import oracle_lib as ol  # noqa: E402
import oracle_test  # noqa: E402  (KernRun)

PROMPT_LENGTH = 17
CHUNKS = (1, 5, 17)


def shapes(base):
    """(name, config) of the odd shapes, each from the tiny Llama's config."""
    def cfg(**change):
        out = dict(base)
        out.update(change)
        return {k: v for k, v in out.items() if v is not None}
    return [
        ("llama D32 MHA 3 heads, untied, llama3 scaling (original 64)", cfg()),
        ("mistral D16 GQA 4/2, tied, plain RoPE",
         cfg(architectures=["MistralForCausalLM"], model_type="mistral", sliding_window=None, hidden_size=64,
             num_attention_heads=4, num_key_value_heads=2, head_dim=None, tie_word_embeddings=True,
             rope_scaling=None, rope_theta=10000.0)),
        ("llama D64 (config head_dim, not hidden / heads) GQA 6/2, untied, llama3 scaling (original 32)",
         cfg(hidden_size=96, num_attention_heads=6, num_key_value_heads=2, head_dim=64,
             rope_scaling={"factor": 4.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                           "original_max_position_embeddings": 32, "rope_type": "llama3"})),
        ("llama D128 GQA 2/1, tied, llama3 scaling (original 64)",
         cfg(hidden_size=256, num_attention_heads=2, num_key_value_heads=1, head_dim=None, intermediate_size=192,
             tie_word_embeddings=True)),
    ]


def qwen2_shapes(base):
    """(name, config) of Qwen2.5-style shapes (q, k, v biases), from the tiny Qwen2's config."""
    def cfg(**change):
        out = dict(base)
        out.update(change)
        return {k: v for k, v in out.items() if v is not None}
    return [
        ("qwen2 D16 GQA 4/2, tied, qkv bias", cfg()),
        ("qwen2 D32 MHA 3 heads, untied, qkv bias", cfg(hidden_size=96, num_attention_heads=3, num_key_value_heads=3,
                                                         tie_word_embeddings=False)),
    ]


def checkpoint(tmp, config, weights):
    """A HF-format checkpoint folder of `weights` (kern's exported layout split back into HF names)."""
    import decoder_config
    import safetensors_io as st
    import weights_test as wt
    ckpt = os.path.join(tmp, "ckpt")
    os.makedirs(ckpt)
    path = os.path.join(ckpt, "config.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
    c = decoder_config.load_config(path)
    with st.SafetensorsFile(weights) as f:
        tensors = wt.hf_tensors(st, f, c, with_lm_head=not c.tie_word_embeddings)
    wt.write_file(st, os.path.join(ckpt, "model.safetensors"), tensors)
    return ckpt, c


def run_shape(root, kern_verify, kern_run, oracle, name, config, work):
    """The failures of one shape (empty: agrees)."""
    failures = []
    provider = os.path.join(root, "examples")
    weights = os.path.join(work, "random.safetensors")
    with open(os.path.join(work, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f)
    subprocess.run(["/usr/bin/python3", os.path.join(provider, "gen_random_weights.py"),
                    os.path.join(work, "config.json"), "-o", weights, "--seed", "11"], check=True)
    ckpt, c = checkpoint(work, config, weights)
    model = os.path.join(work, "model")
    proc = subprocess.run(["/usr/bin/python3", os.path.join(provider, "convert_hf.py"), ckpt, "-o", model,
                           "--kern-verify", kern_verify, "--unpinned"], capture_output=True, text=True)
    if proc.returncode != 0:
        return [f"{name}: convert_hf.py exited {proc.returncode}: {proc.stderr.strip()}"]
    import safetensors_io as st
    with st.SafetensorsFile(os.path.join(model, "weights.safetensors")) as a, st.SafetensorsFile(weights) as b:
        if list(a.tensors) != list(b.tensors) or any(a.read(t) != b.read(t) for t in b.tensors):
            failures.append(f"{name}: the converted tensors differ from gen_random_weights.py's")
    oracle.load(os.path.join(ckpt, "config.json"), weights, c.vocab)
    runner = oracle_test.KernRun(kern_run, os.path.join(model, "weights.safetensors"), c.vocab, work)
    prompt = ol.prompt_ids(PROMPT_LENGTH, c.vocab)
    rows = {}
    for chunk in CHUNKS:
        ids, last = runner.greedy(model, prompt, chunk)
        if tuple(ids) not in rows:
            rows[tuple(ids)] = oracle.run(prompt, ol.STEPS, forced=ids)[1]
        ok, report = ol.compare(prompt, ids, last, rows[tuple(ids)])
        print(f"{name}, chunk {chunk}: {'agrees' if ok else 'DISAGREES'} with llama.cpp")
        print(f"  kern ids: {ids}")
        for line in report:
            print("  " + line)
        if not ok:
            failures.append(f"{name}, chunk {chunk}: kern disagrees with llama.cpp")
        if ol.changes(prompt, ids) * 2 < len(ids):
            failures.append(f"{name}, chunk {chunk}: sequence not discriminating: {ids}")
    if c.rope_llama3 is not None:
        failures += teeth(root, kern_verify, kern_run, oracle, name, config, ckpt, work, prompt, rows)
    if c.qkv_bias:
        failures += bias_teeth(kern_run, oracle, name, model, work, prompt)
    return failures


def bias_teeth(kern_run, oracle, name, model, work, prompt):
    """The converted weights with the qkv biases zeroed must disagree with
    llama.cpp's run with them: the comparison sees the bias add."""
    import safetensors_io as st
    zeroed = os.path.join(work, "no-bias.safetensors")
    with st.SafetensorsFile(os.path.join(model, "weights.safetensors")) as f:
        specs = []
        for t, (dtype, shape, _, _) in f.tensors.items():
            raw = f.read(t)
            if t.endswith("qkv_proj.bias"):
                raw = bytes(len(raw))
            specs.append(st.TensorSpec(t, dtype, shape, (lambda r=raw: [r])))
        st.write(zeroed, specs)
    runner = oracle_test.KernRun(kern_run, zeroed, oracle.vocab, work)
    ids, last = runner.greedy(os.path.join(model, "model.kplan"), prompt, 17)
    ok, report = ol.compare(prompt, ids, last, oracle.run(prompt, ol.STEPS, forced=ids)[1])
    print(f"{name}, kern without the qkv biases: {'ACCEPTED' if ok else 'rejected, as it must be'}")
    for line in report[-2:]:
        print("  " + line)
    return [f"{name}: kern without the qkv biases passes the comparison: no teeth"] if ok else []


def teeth(root, kern_verify, kern_run, oracle, name, config, ckpt, work, prompt, rows):
    """The same checkpoint converted without its rope_scaling (plain RoPE in
    kern's cache) must disagree with llama.cpp's llama3 run: the comparison
    sees the scaling."""
    plain = os.path.join(work, "plain")
    os.makedirs(plain)
    for f in os.listdir(ckpt):
        os.symlink(os.path.join(ckpt, f), os.path.join(plain, f)) if f != "config.json" else None
    with open(os.path.join(plain, "config.json"), "w", encoding="utf-8") as f:
        json.dump({**config, "rope_scaling": None}, f)
    model = os.path.join(work, "plain-model")
    proc = subprocess.run(["/usr/bin/python3", os.path.join(root, "examples", "convert_hf.py"), plain, "-o", model,
                           "--kern-verify", kern_verify, "--unpinned"], capture_output=True, text=True)
    if proc.returncode != 0:
        return [f"{name}: convert_hf.py (no rope_scaling) exited {proc.returncode}: {proc.stderr.strip()}"]
    runner = oracle_test.KernRun(kern_run, os.path.join(model, "weights.safetensors"), oracle.vocab, work)
    ids, last = runner.greedy(model, prompt, 17)
    forced = oracle.run(prompt, ol.STEPS, forced=ids)[1]
    ok, report = ol.compare(prompt, ids, last, forced)
    print(f"{name}, kern without the llama3 scaling: {'ACCEPTED' if ok else 'rejected, as it must be'}")
    for line in report[-2:]:
        print("  " + line)
    return [f"{name}: kern without the llama3 scaling passes the comparison: no teeth"] if ok else []


def main(argv):
    if len(argv) != 4:
        print("usage: oracle_families_test.py SOURCE_ROOT KERN_VERIFY KERN_RUN")
        return 1
    root, kern_verify, kern_run = argv[1:]
    if not kern_run or not os.path.isfile(kern_run):
        print(f"SKIP: kern-run is not built ({kern_run or 'no target'})")
        return 77
    with open(os.path.join(root, "examples", "tiny-llama.config.json"), encoding="utf-8") as f:
        base = json.load(f)
    with open(os.path.join(root, "examples", "tiny-qwen2.config.json"), encoding="utf-8") as f:
        qwen2 = json.load(f)
    failures = []
    with tempfile.TemporaryDirectory() as top:
        try:
            oracle = ol.Oracle(root, top)
        except ol.OracleSetupError as e:
            print(f"FAIL: {e}")
            return 1
        for i, (name, config) in enumerate(shapes(base) + qwen2_shapes(qwen2)):
            work = os.path.join(top, f"shape{i}")
            os.makedirs(work)
            failures += run_shape(root, kern_verify, kern_run, oracle, name, config, work)
    for f in failures:
        print("FAIL: " + f)
    print(f"{'FAIL' if failures else 'PASS'}: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
