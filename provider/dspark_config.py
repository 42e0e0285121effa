"""Reads a DSpark draft config (docs/speculative.md) and lists the draft's
tensors in kern's exported layout. Shared by gen_qwen3_dspark_manifest.py,
gen_random_weights.py --draft and export_qwen3.py --draft.

A draft config is a JSON object with exactly these fields:
  "draft_layers":     number of DFlash draft layers (the target's geometry);
  "target_layer_ids": the tapped target layers, strictly increasing, each in
                      [0, num_hidden_layers): the tap is the layer's OUTPUT
                      (hidden + residual after the layer, DFlash's
                      `hidden_states[layer_id + 1]`);
  "block_size":       rows of a draft pass and of verify (anchor + block - 1
                      drafted tokens), 2..8 (verify runs the m <= 8 decode gemvs);
  "mask_token_id":    the id embedded in the block's rows 1..block-1;
  "markov_dim":       width of the Markov head's embedding (markov_w1 [V, dim]).
Standard library only.
"""

from dataclasses import dataclass

import json_in
from decoder_config import ConfigError, layer_tensors

MAX_BLOCK = 8  # verify's rows: the fused decode gemvs take at most 8 (docs/kernels.md §11)
FIELDS = ("draft_layers", "target_layer_ids", "block_size", "mask_token_id", "markov_dim")


@dataclass(frozen=True)
class DraftConfig:
    """A DSpark draft: `layers` DFlash layers, `taps` (target layer outputs),
    `block` rows per pass, `mask_token`, Markov embedding width `markov_dim`."""

    layers: int
    taps: tuple
    block: int
    mask_token: int
    markov_dim: int


def _int(cfg, key, low, high):
    value = cfg.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ConfigError(f"draft.{key}: expected an integer in [{low}, {high}], found {value!r}")
    return value


def parse_draft_config(cfg, target):
    """A DraftConfig from a parsed JSON value, checked against the target's
    DecoderConfig (a Qwen3 one: the DSpark programs are written for Qwen3's
    layers). Raises ConfigError naming the field."""
    if target.family != "qwen3":
        raise ConfigError(f"a DSpark draft needs a Qwen3 target (Qwen3ForCausalLM); the target config is "
                          f"{target.family}")
    if not isinstance(cfg, dict):
        raise ConfigError("expected a JSON object at the top level")
    unknown = sorted(set(cfg) - set(FIELDS))
    if unknown:
        raise ConfigError(f"draft.{unknown[0]}: unknown field (expected {', '.join(FIELDS)})")
    for key in FIELDS:
        if key not in cfg:
            raise ConfigError(f"draft.{key}: missing")
    taps = cfg["target_layer_ids"]
    if not isinstance(taps, list) or not taps:
        raise ConfigError(f"draft.target_layer_ids: expected a non-empty array, found {taps!r}")
    for i, t in enumerate(taps):
        if not isinstance(t, int) or isinstance(t, bool) or not 0 <= t < target.layers:
            raise ConfigError(f"draft.target_layer_ids[{i}]: expected a target layer in [0, {target.layers}), "
                              f"found {t!r}")
        if i and t <= taps[i - 1]:
            raise ConfigError(f"draft.target_layer_ids[{i}]: {t} is not greater than the previous id "
                              f"{taps[i - 1]} (strictly increasing)")
    return DraftConfig(layers=_int(cfg, "draft_layers", 1, 1024), taps=tuple(taps),
                       block=_int(cfg, "block_size", 2, MAX_BLOCK),
                       mask_token=_int(cfg, "mask_token_id", 0, target.vocab - 1),
                       markov_dim=_int(cfg, "markov_dim", 1, 1 << 20))


def load_draft_config(path, target):
    """Parses the draft config file `path` (messages start with `path`;
    json_in.py's limits); OSError when it cannot be read."""
    cfg = json_in.load(path)
    try:
        return parse_draft_config(cfg, target)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None


def draft_layer_tensors(cfg, layer):
    """(name, dtype, shape) of draft layer `layer`: the target layer's tensors
    under `draft.layers.N.` (merged qkv_proj and gate_up_proj)."""
    return layer_tensors(cfg, f"draft.layers.{layer}.")


def draft_tensors(cfg, draft):
    """The draft's tensors in file order (after the target's): the layers,
    `draft.fc.J.weight [E, E]` (column block J of DFlash's fc [E, taps E]:
    one accumulating GEMM per tap), `draft.hidden_norm.weight`,
    `draft.norm.weight`, and the Markov head `draft.markov_w1.weight`,
    `draft.markov_w2.weight` [V, markov_dim]. The draft shares the target's
    embedding, lm_head and rope cache."""
    E, V = cfg.hidden, cfg.vocab
    out = []
    for layer in range(draft.layers):
        out += draft_layer_tensors(cfg, layer)
    out += [(f"draft.fc.{j}.weight", "BF16", [E, E]) for j in range(len(draft.taps))]
    out += [("draft.hidden_norm.weight", "BF16", [E]), ("draft.norm.weight", "BF16", [E]),
            ("draft.markov_w1.weight", "BF16", [V, draft.markov_dim]),
            ("draft.markov_w2.weight", "BF16", [V, draft.markov_dim])]
    return out
