#!/usr/bin/env python3
"""mine_torch.py CONFIG {eager|compile} [--layers N] [--prompt N] [--steps N]

The program test/gpu/run.sh's `mine` step captures with kern-capture
(docs/mining.md "On a GPU machine"): HF transformers' Qwen3ForCausalLM
built from CONFIG (an HF config.json) with its first N layers (default 2: the
launch stream of every layer is the same, and a small model keeps
torch.compile's build inside the step's budget), bf16 on the GPU, random
weights (HF's own initialisation: mining reads launches, not numerics), then
one prefill of PROMPT tokens (default 16) and STEPS decode steps (default 3)
through the model's forward with a KV cache, each step's input the previous
step's greedy id — eager, or the forward wrapped in torch.compile (Inductor's
Triton kernels have flat parameter ABIs). Requests are separated by pauses,
as kern-mine's request windows expect. Prints one line per pass. Exit 0; 77
(skip, saying why) without torch, transformers or a GPU; 2 usage.
"""
import argparse
import json
import sys
import time


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('config')
    ap.add_argument('mode', choices=['eager', 'compile'])
    ap.add_argument('--layers', type=int, default=2)
    ap.add_argument('--prompt', type=int, default=16)
    ap.add_argument('--steps', type=int, default=3)
    args = ap.parse_args(argv)
    if args.layers < 1 or args.prompt < 1 or args.steps < 0:
        ap.error('--layers and --prompt must be positive, --steps not negative')
    try:
        import torch
        import transformers
    except ImportError as e:
        print(f'SKIP: {e.name} is not installed')
        return 77
    if not torch.cuda.is_available():
        print('SKIP: torch sees no CUDA device')
        return 77
    with open(args.config) as f:
        cfg = json.load(f)
    cfg['num_hidden_layers'] = min(args.layers, cfg.get('num_hidden_layers', args.layers))
    config = transformers.Qwen3Config(**{k: v for k, v in cfg.items() if k not in ('architectures', 'torch_dtype')})
    torch.manual_seed(0)
    model = transformers.Qwen3ForCausalLM(config).to(device='cuda', dtype=torch.bfloat16).eval()
    forward = torch.compile(model.forward) if args.mode == 'compile' else model.forward
    ids = torch.arange(1, args.prompt + 1, device='cuda').unsqueeze(0)
    with torch.no_grad():
        for request in range(2):  # two requests: the second runs warm (compiled graphs built)
            time.sleep(0.05)  # a pause: a new request window (kern-mine --gap-ms 5)
            cache = transformers.DynamicCache()
            out = forward(input_ids=ids, past_key_values=cache, use_cache=True)
            nxt = out.logits[:, -1].argmax(-1, keepdim=True)
            seen = [int(nxt)]
            for _ in range(args.steps):
                out = forward(input_ids=nxt, past_key_values=out.past_key_values, use_cache=True)
                nxt = out.logits[:, -1].argmax(-1, keepdim=True)
                seen.append(int(nxt))
            torch.cuda.synchronize()
            print(f'request {request}: prefill {args.prompt} tokens, {args.steps} decode steps, ids {seen}')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
