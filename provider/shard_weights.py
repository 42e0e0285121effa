#!/usr/bin/python3
"""shard_weights.py CONFIG.json WEIGHTS.safetensors --tp N -o DIR

Splits weights in kern's exported layout (export_qwen3.py, convert_hf.py,
gen_random_weights.py) into the shards of an N-rank tensor-parallel world
(provider/tensor_parallel.py, docs/parallel.md): DIR/weights.rank<r>.safetensors
for r = 0 .. N-1, each what rank r's manifest (`gen_manifest.py --tp N`) binds.
q/k/v and gate/up keep the rank's rows, o_proj and down_proj its columns;
everything else is copied whole.

Exit status: 0 on success, 1 on a config the --tp does not divide or a
weights file that does not hold the config's tensors, 2 on bad usage or a
file that cannot be read or written (provider/tool_io.py).
"""

import argparse
import os
import sys

import safetensors_io as st
import tensor_parallel
from decoder_config import ConfigError, exported_tensors, load_config
from tool_io import run


def shard(config_path, weights_path, tp, out_dir):
    c = load_config(config_path)
    tensor_parallel.check(c, tp, config_path)
    with st.SafetensorsFile(weights_path) as f:
        specs = []
        for name, dtype, shape in exported_tensors(c):
            got = f.tensors.get(name)
            if got is None or got[0] != dtype or got[1] != shape:
                raise ConfigError(f"{weights_path}: tensor {name}: expected {dtype} {shape}, found "
                                  f"{'none' if got is None else f'{got[0]} {got[1]}'}")
            specs.append(st.TensorSpec(name, dtype, shape, lambda name=name: f.chunks(name)))
        os.makedirs(out_dir, exist_ok=True)
        for rank in range(tp):
            st.write(os.path.join(out_dir, tensor_parallel.rank_weights_file(rank)),
                     tensor_parallel.shard_specs(specs, c, tp, rank), f.metadata)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    ap.add_argument("config", help="HF config.json of the model")
    ap.add_argument("weights", help="the full weights in kern's exported layout")
    ap.add_argument("--tp", type=int, required=True, help="ranks (1, 2, 4 or 8)")
    ap.add_argument("-o", "--output", required=True, help="directory to write the shards to")
    args = ap.parse_args(argv)
    shard(args.config, args.weights, args.tp, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(run("shard_weights", main, sys.argv[1:]))
