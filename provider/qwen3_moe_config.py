"""The Qwen3-MoE family's config reader (`Qwen3MoeForCausalLM`, model_type
qwen3_moe): Qwen3's attention (q/k RMSNorm, neox RoPE, no biases) and a
sparse MLP on the layers HF transformers makes sparse
(Qwen3MoeDecoderLayer: `layer not in mlp_only_layers and num_experts > 0
and (layer + 1) % decoder_sparse_step == 0`), a dense MLP of
`intermediate_size` on the others (docs/causal-lm-manifest.md "Qwen3-MoE").
Fields not read: the training-only router loss (`output_router_logits`,
`router_aux_loss_coef`).
"""

import hf_config
from decoder_config import ConfigError, parse_geometry
from hf_config import flag, json_type, positive_int
from qwen3_config import refuse_qwen3_unsupported

# The router's logits of one row live in the CUDA kernel's shared memory (docs/kernels.md §18).
MAX_EXPERTS = 1024


def sparse_layers(cfg, layers, experts):
    """The indices of the sparse (MoE) layers, as HF transformers picks them."""
    step = positive_int(cfg, "decoder_sparse_step", 1)
    only = cfg.get("mlp_only_layers", [])
    if only is None:
        only = []
    if not isinstance(only, list) or any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < layers
                                         for i in only):
        raise ConfigError(f"config.mlp_only_layers: expected an array of layer indices from 0 to {layers - 1}, "
                          f"found {hf_config.shown(only)}")
    return tuple(i for i in range(layers) if i not in only and experts > 0 and (i + 1) % step == 0)


def parse_qwen3_moe(cfg):
    """A DecoderConfig from a parsed Qwen3-MoE config object. Every field
    read is type-checked; refused as for Qwen3 (rope scaling, sliding
    window, attention biases, soft-capping, another activation), and
    num_experts above MAX_EXPERTS, num_experts_per_tok above num_experts,
    a shared expert (Qwen2-MoE's `shared_expert_intermediate_size`)."""
    if not isinstance(cfg, dict):
        raise ConfigError(f"expected a JSON object at the top level, found {json_type(cfg)}")
    model_type = cfg.get("model_type")
    if model_type != "qwen3_moe":
        raise ConfigError(f"config.model_type: expected \"qwen3_moe\", found {hf_config.shown(model_type)}")
    refuse_qwen3_unsupported(cfg)
    if cfg.get("shared_expert_intermediate_size"):
        raise ConfigError("config.shared_expert_intermediate_size: a shared expert is not supported (Qwen3-MoE "
                          "has none; Qwen2-MoE's is not implemented)")
    experts = positive_int(cfg, "num_experts")
    if experts > MAX_EXPERTS:
        raise ConfigError(f"config.num_experts: {experts} exceeds {MAX_EXPERTS}, the most the router kernel takes")
    top_k = positive_int(cfg, "num_experts_per_tok")
    if top_k > experts:
        raise ConfigError(f"config.num_experts_per_tok: {top_k} exceeds num_experts {experts}")
    layers = positive_int(cfg, "num_hidden_layers")
    return parse_geometry(cfg, "qwen3_moe", experts=experts, experts_per_tok=top_k,
                          moe_intermediate=positive_int(cfg, "moe_intermediate_size"),
                          norm_topk_prob=flag(cfg, "norm_topk_prob", False),
                          moe_layers=sparse_layers(cfg, layers, experts))
