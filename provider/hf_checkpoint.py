"""Checks that a Hugging Face checkpoint holds exactly what the config says,
shared by every family's exporter (export_qwen3.specs, and so convert_hf.py):
a tensor kern would leave unread is an error naming it and its file, never a
silently smaller model (llama.cpp's converter fails on a tensor it cannot
map; HF's loader warns). In the order they are checked:

1. a layer beyond the config's `num_hidden_layers` (layers 0-2 with
   `num_hidden_layers: 2`: layer 2 would be dropped);
2. attention biases (`self_attn.{q,k,v,o}_proj.bias`) where the config has
   no `attention_bias: true` (a Qwen2-style checkpoint labelled qwen3: the
   biases would be dropped and the model would answer wrongly);
3. any other tensor the export does not read.

Skipped by name, as HF's loaders skip them (IGNORED): the rotary
`inv_freq` buffers older checkpoints saved (`model.rotary_emb.inv_freq`,
`model.layers.N.self_attn.rotary_emb.inv_freq`): kern computes the rope
table from `rope_theta`, as HF recomputes these buffers.
Standard library only.
"""

import re

from hf_config import ConfigError

IGNORED = re.compile(r"model\.(?:layers\.\d+\.self_attn\.)?rotary_emb\.inv_freq")
_LAYER = re.compile(r"model\.layers\.(\d+)\.")
_ATTENTION_BIAS = re.compile(r"model\.layers\.\d+\.self_attn\.[qkvo]_proj\.bias")
_LISTED = 3  # unused tensors named in the message; the rest are counted


def _layer_order(name):
    m = _LAYER.match(name)
    return (int(m.group(1)) if m else -1, name)


def check_tensors(where, layers, attention_bias, used, family):
    """Raises ConfigError, naming the file and the tensor, unless every
    tensor of the checkpoint (`where`: name -> the SafetensorsFile holding
    it) is in `used` or IGNORED. `layers` is config.num_hidden_layers,
    `attention_bias` config.attention_bias, `family` the model_type named
    in messages."""
    names = sorted((n for n in where if not IGNORED.fullmatch(n)), key=_layer_order)
    for name in names:
        m = _LAYER.match(name)
        if m and int(m.group(1)) >= layers:
            raise ConfigError(f"{where[name].path}: tensor {name} is in layer {m.group(1)}, beyond "
                              f"config.num_hidden_layers {layers} (layers 0 to {layers - 1}); kern would drop it")
    if not attention_bias:
        for name in names:
            if _ATTENTION_BIAS.fullmatch(name):
                raise ConfigError(f"{where[name].path}: tensor {name} is an attention bias, but config.attention_bias "
                                  f"is not true (a Qwen2-style checkpoint labelled {family}?); kern would drop it")
    unused = [n for n in names if n not in used]
    if unused:
        listed = ", ".join(unused[:_LISTED]) + (", ..." if len(unused) > _LISTED else "")
        also = f" ({len(unused)} unused tensors: {listed})" if len(unused) > 1 else ""
        raise ConfigError(f"{where[unused[0]].path}: tensor {unused[0]} is not used by kern's {family} layout; "
                          f"kern would drop it{also}")
