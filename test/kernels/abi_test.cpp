// The launch contract shared by every cpu reference kernel (kernels.h):
// the registry knows every symbol of docs/kernels.md; bad scalar params,
// wrong param counts, null pointers that would be dereferenced and grids that
// do not fit the work return an error Status naming the kernel and the param.
// The ABI table below is docs/kernels.md's, param by param.
#include <fstream>
#include <new>
#include <regex>
#include <set>
#include <sstream>

#include "kernels-src/cpu/kernel_args.h"
#include "kernels-src/cpu/kernels.h"
#include "test/kernels/kernel_test_util.h"

using namespace kern::cpu::test;

namespace {

enum class P { kPtr, kI32, kI64, kF32, kU8 };

struct Param {
  P kind;
  const char* name;
  double value;  // the "no work" value: 0 for sizes, 1 for counts that must be positive
};

struct Abi {
  const char* symbol;
  std::vector<Param> params;
  uint32_t grid[3];
};

// clang-format off
/// The parameters of the two qkv decode attentions (one ABI, docs/kernels.md
/// §13a and §15a).
const std::vector<Param> kQkvAttentionParams = {{P::kPtr, "qkv", 0}, {P::kPtr, "q_norm_weight", 0},
    {P::kPtr, "k_norm_weight", 0}, {P::kPtr, "cos_sin_cache", 0}, {P::kPtr, "kv_cache", 0},
    {P::kPtr, "block_tables", 0}, {P::kPtr, "seq_lens", 0}, {P::kPtr, "k_scale", 0}, {P::kPtr, "v_scale", 0},
    {P::kPtr, "partial_o", 0}, {P::kPtr, "partial_ml", 0}, {P::kPtr, "counters", 0}, {P::kPtr, "out", 0},
    {P::kI32, "num_seqs", 0}, {P::kI32, "num_heads", 0}, {P::kI32, "num_kv_heads", 1},
    {P::kI32, "head_dim", 0}, {P::kI64, "page_stride", 0}, {P::kF32, "scale", 1},
    {P::kI32, "pages_per_seq", 0}, {P::kI32, "num_splits", 16}, {P::kI32, "qkv_stride", 0},
    {P::kF32, "eps", 1e-6}, {P::kU8, "rope_flags", 1}};

const std::vector<Abi> kAbis = {
  {"kern_embedding_bf16", {{P::kPtr, "token_ids", 0}, {P::kPtr, "table", 0}, {P::kPtr, "out", 0},
    {P::kI32, "num_tokens", 0}, {P::kI32, "hidden", 0}, {P::kI32, "vocab", 0}}, {1, 1, 1}},
  {"kern_rmsnorm_bf16", {{P::kPtr, "x", 0}, {P::kPtr, "weight", 0}, {P::kPtr, "y", 0},
    {P::kI32, "rows", 0}, {P::kI32, "n", 0}, {P::kF32, "eps", 1e-6}}, {1, 1, 1}},
  {"kern_add_rmsnorm_bf16", {{P::kPtr, "x", 0}, {P::kPtr, "residual", 0}, {P::kPtr, "weight", 0},
    {P::kPtr, "y", 0}, {P::kI32, "rows", 0}, {P::kI32, "n", 0}, {P::kF32, "eps", 1e-6}}, {1, 1, 1}},
  {"kern_head_rmsnorm_bf16", {{P::kPtr, "x", 0}, {P::kPtr, "weight", 0}, {P::kPtr, "y", 0},
    {P::kI32, "total_heads", 0}, {P::kI32, "heads_per_token", 1}, {P::kI32, "head_dim", 0},
    {P::kI32, "x_stride", 0}, {P::kI32, "y_stride", 0}, {P::kF32, "eps", 1e-6}}, {1, 1, 1}},
  {"kern_rope_bf16", {{P::kPtr, "positions", 0}, {P::kPtr, "q", 0}, {P::kPtr, "k", 0},
    {P::kPtr, "cos_sin_cache", 0}, {P::kI32, "num_tokens", 0}, {P::kI32, "num_q_heads", 0},
    {P::kI32, "num_k_heads", 0}, {P::kI32, "head_dim", 0}, {P::kI32, "q_stride", 0},
    {P::kI32, "k_stride", 0}, {P::kU8, "is_neox", 1}}, {1, 1, 1}},
  {"kern_silu_and_mul_bf16", {{P::kPtr, "gate_up", 0}, {P::kPtr, "out", 0},
    {P::kI32, "num_tokens", 0}, {P::kI32, "d", 0}}, {1, 1, 1}},
  {"kern_reshape_and_cache_bf16", {{P::kPtr, "k", 0}, {P::kPtr, "v", 0}, {P::kPtr, "kv_cache", 0},
    {P::kPtr, "slot_mapping", 0}, {P::kPtr, "k_scale", 0}, {P::kPtr, "v_scale", 0},
    {P::kI32, "num_tokens", 0}, {P::kI32, "num_kv_heads", 0}, {P::kI32, "head_dim", 0},
    {P::kI32, "k_stride", 0}, {P::kI32, "v_stride", 0}, {P::kI64, "page_stride", 0}}, {1, 1, 1}},
  {"kern_paged_attention_partial_bf16", {{P::kPtr, "q", 0}, {P::kPtr, "kv_cache", 0},
    {P::kPtr, "block_table", 0}, {P::kPtr, "seq_lens", 0}, {P::kPtr, "cu_seqlens_q", 0},
    {P::kPtr, "k_scale", 0}, {P::kPtr, "v_scale", 0}, {P::kPtr, "partial_o", 0},
    {P::kPtr, "partial_ml", 0}, {P::kI32, "num_tokens", 0}, {P::kI32, "num_heads", 0},
    {P::kI32, "num_kv_heads", 1}, {P::kI32, "head_dim", 0}, {P::kI64, "page_stride", 0},
    {P::kF32, "scale", 1}, {P::kI32, "num_splits", 16}}, {1, 16, 1}},
  {"kern_paged_attention_reduce_bf16", {{P::kPtr, "partial_o", 0}, {P::kPtr, "partial_ml", 0},
    {P::kPtr, "out", 0}, {P::kI32, "num_tokens", 0}, {P::kI32, "num_heads", 0},
    {P::kI32, "head_dim", 0}, {P::kI32, "num_splits", 16}}, {1, 1, 1}},
  {"kern_paged_attention_prefill_bf16", {{P::kPtr, "q", 0}, {P::kPtr, "kv_cache", 0},
    {P::kPtr, "block_table", 0}, {P::kPtr, "seq_lens", 0}, {P::kPtr, "cu_seqlens_q", 0},
    {P::kPtr, "k_scale", 0}, {P::kPtr, "v_scale", 0}, {P::kPtr, "out", 0},
    {P::kI32, "num_tokens", 0}, {P::kI32, "num_heads", 0}, {P::kI32, "num_kv_heads", 1},
    {P::kI32, "head_dim", 0}, {P::kI64, "page_stride", 0}, {P::kF32, "scale", 1}}, {1, 1, 1}},
  {"kern_paged_attention_noncausal_bf16", {{P::kPtr, "q", 0}, {P::kPtr, "kv_cache", 0},
    {P::kPtr, "block_table", 0}, {P::kPtr, "seq_lens", 0}, {P::kPtr, "cu_seqlens_q", 0},
    {P::kPtr, "k_scale", 0}, {P::kPtr, "v_scale", 0}, {P::kPtr, "out", 0},
    {P::kI32, "num_tokens", 0}, {P::kI32, "num_heads", 0}, {P::kI32, "num_kv_heads", 1},
    {P::kI32, "head_dim", 0}, {P::kI64, "page_stride", 0}, {P::kF32, "scale", 1}}, {1, 1, 1}},
  {"kern_argmax_partial_bf16", {{P::kPtr, "logits", 0}, {P::kPtr, "partial_val", 0},
    {P::kPtr, "partial_idx", 0}, {P::kI32, "rows", 0}, {P::kI32, "vocab", 0},
    {P::kI32, "num_chunks", 64}}, {64, 1, 1}},
  {"kern_argmax_reduce", {{P::kPtr, "partial_val", 0}, {P::kPtr, "partial_idx", 0},
    {P::kPtr, "next_token", 0}, {P::kI32, "rows", 0}, {P::kI32, "num_chunks", 64}}, {1, 1, 1}},
  {"kern_gemv_bf16", {{P::kPtr, "a", 0}, {P::kPtr, "w", 0}, {P::kPtr, "c", 0}, {P::kPtr, "partial", 0}, {P::kPtr, "counters", 0},
    {P::kI32, "m", 0}, {P::kI32, "n", 0}, {P::kI32, "k", 0}, {P::kI32, "lda", 0}, {P::kI32, "ldc", 0},
    {P::kI32, "splits", 1}}, {1, 1, 1}},
  {"kern_gemv_acc_bf16", {{P::kPtr, "a", 0}, {P::kPtr, "w", 0}, {P::kPtr, "c", 0}, {P::kPtr, "partial", 0}, {P::kPtr, "counters", 0},
    {P::kI32, "m", 0}, {P::kI32, "n", 0}, {P::kI32, "k", 0}, {P::kI32, "lda", 0}, {P::kI32, "ldc", 0},
    {P::kI32, "splits", 1}}, {1, 1, 1}},
  {"kern_gemv_silu_mul_bf16", {{P::kPtr, "a", 0}, {P::kPtr, "w", 0}, {P::kPtr, "c", 0}, {P::kPtr, "partial", 0}, {P::kPtr, "counters", 0},
    {P::kI32, "m", 0}, {P::kI32, "n", 0}, {P::kI32, "k", 0}, {P::kI32, "lda", 0}, {P::kI32, "ldc", 0},
    {P::kI32, "splits", 1}}, {1, 1, 1}},
  {"kern_gemv_residual_bf16", {{P::kPtr, "a", 0}, {P::kPtr, "w", 0}, {P::kPtr, "residual", 0}, {P::kPtr, "c", 0}, {P::kPtr, "partial", 0}, {P::kPtr, "counters", 0},
    {P::kI32, "m", 0}, {P::kI32, "n", 0}, {P::kI32, "k", 0}, {P::kI32, "lda", 0}, {P::kI32, "ldc", 0},
    {P::kI32, "splits", 1}}, {1, 1, 1}},
  {"kern_gemv_rmsnorm_bf16", {{P::kPtr, "a", 0}, {P::kPtr, "norm_weight", 0}, {P::kPtr, "w", 0}, {P::kPtr, "c", 0}, {P::kPtr, "partial", 0}, {P::kPtr, "counters", 0},
    {P::kI32, "m", 0}, {P::kI32, "n", 0}, {P::kI32, "k", 0}, {P::kI32, "lda", 0}, {P::kI32, "ldc", 0},
    {P::kI32, "splits", 1},
    {P::kF32, "eps", 1e-6}}, {1, 1, 1}},
  {"kern_gemv_rmsnorm_silu_mul_bf16", {{P::kPtr, "a", 0}, {P::kPtr, "norm_weight", 0}, {P::kPtr, "w", 0}, {P::kPtr, "c", 0}, {P::kPtr, "partial", 0}, {P::kPtr, "counters", 0},
    {P::kI32, "m", 0}, {P::kI32, "n", 0}, {P::kI32, "k", 0}, {P::kI32, "lda", 0}, {P::kI32, "ldc", 0},
    {P::kI32, "splits", 1},
    {P::kF32, "eps", 1e-6}}, {1, 1, 1}},
  {"kern_gemv_rmsnorm_argmax_bf16", {{P::kPtr, "a", 0}, {P::kPtr, "norm_weight", 0}, {P::kPtr, "w", 0},
    {P::kPtr, "c", 0}, {P::kPtr, "partial", 0}, {P::kPtr, "counters", 0}, {P::kPtr, "argmax_val", 0},
    {P::kPtr, "argmax_idx", 0}, {P::kPtr, "next_token", 0}, {P::kI32, "m", 0}, {P::kI32, "n", 0},
    {P::kI32, "k", 0}, {P::kI32, "lda", 0},
    {P::kI32, "ldc", 0}, {P::kI32, "splits", 1}, {P::kF32, "eps", 1e-6}}, {1, 1, 1}},
  {"kern_qk_norm_rope_cache_bf16", {{P::kPtr, "qkv", 0}, {P::kPtr, "q_norm_weight", 0},
    {P::kPtr, "k_norm_weight", 0}, {P::kPtr, "positions", 0}, {P::kPtr, "cos_sin_cache", 0},
    {P::kPtr, "q_out", 0}, {P::kPtr, "kv_cache", 0}, {P::kPtr, "slot_mapping", 0}, {P::kPtr, "k_scale", 0},
    {P::kPtr, "v_scale", 0}, {P::kI32, "num_tokens", 0}, {P::kI32, "num_heads", 0}, {P::kI32, "num_kv_heads", 0},
    {P::kI32, "head_dim", 0}, {P::kI32, "qkv_stride", 0}, {P::kI64, "page_stride", 0}, {P::kF32, "eps", 1e-6},
    {P::kU8, "rope_flags", 1}}, {1, 1, 1}},
  {"kern_attention_decode_bf16", {{P::kPtr, "q", 0}, {P::kPtr, "kv_cache", 0},
    {P::kPtr, "block_table", 0}, {P::kPtr, "seq_lens", 0}, {P::kPtr, "cu_seqlens_q", 0},
    {P::kPtr, "k_scale", 0}, {P::kPtr, "v_scale", 0}, {P::kPtr, "partial_o", 0},
    {P::kPtr, "partial_ml", 0}, {P::kPtr, "counters", 0}, {P::kPtr, "out", 0}, {P::kI32, "num_tokens", 0},
    {P::kI32, "num_heads", 0}, {P::kI32, "num_kv_heads", 1}, {P::kI32, "head_dim", 0}, {P::kI64, "page_stride", 0},
    {P::kF32, "scale", 1}, {P::kI32, "num_splits", 16}}, {1, 16, 1}},
  {"kern_decode_advance", {{P::kPtr, "next_token", 0}, {P::kPtr, "block_table", 0},
    {P::kPtr, "token_ids", 0}, {P::kPtr, "positions", 0}, {P::kPtr, "slot_mapping", 0},
    {P::kPtr, "seq_lens", 0}, {P::kI32, "num_tokens", 0}, {P::kI32, "max_pages", 0},
    {P::kI32, "page_size", 16}}, {1, 1, 1}},
  {"kern_sample_bf16", {{P::kPtr, "logits", 0}, {P::kPtr, "next_token", 0}, {P::kPtr, "temperature", 0},
    {P::kPtr, "top_k", 0}, {P::kPtr, "top_p", 0}, {P::kPtr, "min_p", 0}, {P::kPtr, "seed", 0},
    {P::kPtr, "positions", 0}, {P::kPtr, "histogram", 0}, {P::kI32, "rows", 0}, {P::kI32, "vocab", 0},
    {P::kI32, "max_rows", 0}}, {1, 1, 1}},
  {"kern_attention_decode_batch_bf16", {{P::kPtr, "q", 0}, {P::kPtr, "kv_cache", 0},
    {P::kPtr, "block_tables", 0}, {P::kPtr, "seq_lens", 0}, {P::kPtr, "k_scale", 0}, {P::kPtr, "v_scale", 0},
    {P::kPtr, "partial_o", 0}, {P::kPtr, "partial_ml", 0}, {P::kPtr, "counters", 0}, {P::kPtr, "out", 0},
    {P::kI32, "num_seqs", 0}, {P::kI32, "num_heads", 0}, {P::kI32, "num_kv_heads", 1},
    {P::kI32, "head_dim", 0}, {P::kI64, "page_stride", 0}, {P::kF32, "scale", 1},
    {P::kI32, "pages_per_seq", 0}, {P::kI32, "num_splits", 16}}, {1, 16, 1}},
  {"kern_attention_decode_qkv_bf16", kQkvAttentionParams, {1, 16, 1}},
  {"kern_attention_decode_batch_qkv_bf16", kQkvAttentionParams, {1, 16, 1}},
  {"kern_decode_advance_batch", {{P::kPtr, "next_token", 0}, {P::kPtr, "block_tables", 0},
    {P::kPtr, "token_ids", 0}, {P::kPtr, "positions", 0}, {P::kPtr, "slot_mapping", 0},
    {P::kPtr, "seq_lens", 0}, {P::kI32, "num_seqs", 0}, {P::kI32, "pages_per_seq", 0},
    {P::kI32, "page_size", 16}}, {1, 1, 1}},
  {"extern:cublaslt_bf16_tn", {{P::kPtr, "a", 0}, {P::kPtr, "w", 0}, {P::kPtr, "c", 0},
    {P::kI32, "m", 0}, {P::kI32, "n", 0}, {P::kI32, "k", 0}}, {1, 1, 1}},
  {"extern:cublaslt_bf16_tn_acc", {{P::kPtr, "a", 0}, {P::kPtr, "w", 0}, {P::kPtr, "c", 0},
    {P::kI32, "m", 0}, {P::kI32, "n", 0}, {P::kI32, "k", 0}}, {1, 1, 1}},
  {"extern:gemm_bf16_tn_splitk", {{P::kPtr, "a", 0}, {P::kPtr, "w", 0}, {P::kPtr, "c", 0},
    {P::kI32, "m", 0}, {P::kI32, "n", 0}, {P::kI32, "k", 0}, {P::kI32, "splits", 1}}, {1, 1, 1}},
  {"extern:gemm_bf16_tn_splitk_f32", {{P::kPtr, "a", 0}, {P::kPtr, "w", 0}, {P::kPtr, "c", 0},
    {P::kI32, "m", 0}, {P::kI32, "n", 0}, {P::kI32, "k", 0}, {P::kI32, "splits", 1}}, {1, 1, 1}},
  {"extern:allreduce_sum_f32", {{P::kPtr, "x", 0}, {P::kI32, "count", 0}}, {1, 1, 1}},
  {"extern:allreduce_sum_f32_bf16", {{P::kPtr, "x", 0}, {P::kPtr, "y", 0}, {P::kI32, "count", 0}}, {1, 1, 1}},
  {"kern_last_row", {{P::kPtr, "x", 0}, {P::kI32, "rows", 0}, {P::kI32, "row_bytes", 0}}, {1, 1, 1}},
  {"kern_bias_add_bf16", {{P::kPtr, "x", 0}, {P::kPtr, "bias", 0}, {P::kI32, "rows", 0}, {P::kI32, "n", 0},
    {P::kI32, "ld", 0}}, {1, 1, 1}},
  {"kern_moe_router_bf16", {{P::kPtr, "x", 0}, {P::kPtr, "w", 0}, {P::kPtr, "topk_weights", 0},
    {P::kPtr, "topk_ids", 0}, {P::kI32, "rows", 0}, {P::kI32, "experts", 1}, {P::kI32, "k", 1},
    {P::kI32, "top_k", 1}, {P::kU8, "norm_topk_prob", 0}}, {1, 1, 1}},
  {"kern_moe_gate_up_bf16", {{P::kPtr, "x", 0}, {P::kPtr, "w", 0}, {P::kPtr, "topk_ids", 0}, {P::kPtr, "act", 0},
    {P::kI32, "rows", 0}, {P::kI32, "experts", 1}, {P::kI32, "n", 0}, {P::kI32, "k", 0}, {P::kI32, "top_k", 1}},
    {1, 1, 1}},
  {"kern_moe_down_bf16", {{P::kPtr, "act", 0}, {P::kPtr, "w", 0}, {P::kPtr, "topk_ids", 0},
    {P::kPtr, "topk_weights", 0}, {P::kPtr, "residual", 0}, {P::kI32, "rows", 0}, {P::kI32, "experts", 1},
    {P::kI32, "n", 0}, {P::kI32, "k", 0}, {P::kI32, "top_k", 1}}, {1, 1, 1}},
};
// clang-format on

/// The "no work" launch of an ABI: null pointers, zero sizes.
ArgPack no_work_args(const Abi& abi) {
  ArgPack a;
  for (const Param& p : abi.params) {
    switch (p.kind) {
      case P::kPtr: a.add<void*>(nullptr); break;
      case P::kI32: a.add(static_cast<int32_t>(p.value)); break;
      case P::kI64: a.add(static_cast<int64_t>(p.value)); break;
      case P::kF32: a.add(static_cast<float>(p.value)); break;
      case P::kU8: a.add(static_cast<uint8_t>(p.value)); break;
    }
  }
  return a;
}

kern::Status run(const Abi& abi, const ArgPack& a, size_t num_args) {
  kern::cpu::CpuLaunch l;
  for (int i = 0; i < 3; ++i) l.grid[i] = abi.grid[i];
  l.block[0] = 128;
  l.args = a.data();
  l.num_args = num_args;
  return kern::cpu::find_cpu_kernel(abi.symbol)->run(l);
}

kern::Status throws_bad_alloc(const kern::cpu::CpuLaunch&) { throw std::bad_alloc(); }

/// REQUIREs that `s` failed with a message starting with the symbol and containing `needle`.
void require_error(const kern::Status& s, const std::string& symbol, const std::string& needle) {
  REQUIRE_FALSE(s.ok());
  INFO(s.error().message);
  CHECK(s.error().message.rfind(symbol + ": ", 0) == 0);
  CHECK(s.error().message.find(needle) != std::string::npos);
}

}  // namespace

TEST_CASE("every kernel symbol in docs/kernels.md has a registered cpu reference kernel",
          "[kernels][registry]") {
  std::ifstream in(std::string(KERN_SOURCE_ROOT) + "/docs/kernels.md");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const std::regex symbol_re("`((kern_[a-z0-9_]+)|(extern:[a-z0-9_]+))`");
  std::set<std::string> documented;
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), symbol_re); it != std::sregex_iterator();
       ++it) {
    documented.insert((*it)[1]);
  }
  CHECK(documented.size() == kAbis.size());
  for (const std::string& s : documented) {
    INFO(s);
    CHECK(kern::cpu::find_cpu_kernel(s) != nullptr);
  }
  std::set<kern::cpu::CpuKernelFn> distinct;
  for (const Abi& abi : kAbis) {
    CHECK(documented.count(abi.symbol) == 1);
    distinct.insert(kern::cpu::find_cpu_kernel(abi.symbol)->run);
  }
  CHECK(distinct.size() == kAbis.size());
}

TEST_CASE("find_cpu_kernel returns null for an unknown symbol", "[kernels][registry]") {
  CHECK(kern::cpu::find_cpu_kernel("kern_rmsnorm_f16") == nullptr);
  CHECK(kern::cpu::find_cpu_kernel("extern:cublaslt_bf16_nn") == nullptr);
  CHECK(kern::cpu::find_cpu_kernel("") == nullptr);
}

TEST_CASE("every kernel accepts a launch with no work and null pointers", "[kernels][abi]") {
  for (const Abi& abi : kAbis) {
    const ArgPack a = no_work_args(abi);
    const kern::Status s = run(abi, a, a.size());
    INFO(abi.symbol << ": " << (s.ok() ? "" : s.error().message));
    CHECK(s.ok());
  }
}

TEST_CASE("every kernel rejects a negative size, stride or count and names the param",
          "[kernels][abi]") {
  for (const Abi& abi : kAbis) {
    for (size_t i = 0; i < abi.params.size(); ++i) {
      const Param& p = abi.params[i];
      if (p.kind != P::kI32 && p.kind != P::kI64) continue;
      ArgPack a = no_work_args(abi);
      if (p.kind == P::kI32) a.set<int32_t>(i, -1);
      else a.set<int64_t>(i, -1);
      INFO(abi.symbol << " param " << i);
      require_error(run(abi, a, a.size()), abi.symbol,
                    "param " + std::to_string(i) + " (" + p.name + ") is -1");
    }
  }
}

TEST_CASE("every kernel rejects a launch with the wrong number of params", "[kernels][abi]") {
  for (const Abi& abi : kAbis) {
    ArgPack a = no_work_args(abi);
    a.add<int32_t>(0);  // one spare slot so that n + 1 params are readable
    const size_t n = abi.params.size();
    require_error(run(abi, a, n - 1), abi.symbol, "got " + std::to_string(n - 1) + " params");
    require_error(run(abi, a, n + 1), abi.symbol, "got " + std::to_string(n + 1) + " params");
  }
}

TEST_CASE("a kernel rejects a null pointer it would dereference", "[kernels][abi]") {
  const std::vector<uint16_t> x(8), w(4);
  ArgPack a;
  a.add(x.data()).add(w.data()).add<uint16_t*>(nullptr).add<int32_t>(2).add<int32_t>(4).add(1e-6f);
  require_error(launch("kern_rmsnorm_bf16", a, 2), "kern_rmsnorm_bf16", "param 2 (y) is a null pointer");
}

TEST_CASE("a kernel rejects a grid smaller than the rows it covers", "[kernels][abi]") {
  const std::vector<uint16_t> x(12), w(4);
  std::vector<uint16_t> y(12);
  ArgPack a;
  a.add(x.data()).add(w.data()).add(y.data()).add<int32_t>(3).add<int32_t>(4).add(1e-6f);
  require_error(launch("kern_rmsnorm_bf16", a, 2), "kern_rmsnorm_bf16", "grid.x is 2; must be >= 3");
  CHECK(launch("kern_rmsnorm_bf16", a, 3).ok());
}

TEST_CASE("kernels reject inconsistent sizes", "[kernels][abi]") {
  std::vector<uint16_t> buf(4096);
  SECTION("head_rmsnorm: total_heads not a multiple of heads_per_token") {
    ArgPack a;
    a.add(buf.data()).add(buf.data()).add(buf.data()).add<int32_t>(7).add<int32_t>(2);
    a.add<int32_t>(8).add<int32_t>(16).add<int32_t>(16).add(1e-6f);
    require_error(launch("kern_head_rmsnorm_bf16", a, 4), "kern_head_rmsnorm_bf16",
                  "param 3 (total_heads) is 7; must be a multiple of param 4");
  }
  SECTION("head_rmsnorm: a stride shorter than a token's heads") {
    ArgPack a;
    a.add(buf.data()).add(buf.data()).add(buf.data()).add<int32_t>(4).add<int32_t>(2);
    a.add<int32_t>(8).add<int32_t>(15).add<int32_t>(16).add(1e-6f);
    require_error(launch("kern_head_rmsnorm_bf16", a, 1), "kern_head_rmsnorm_bf16",
                  "param 6 (x_stride) is 15; must be >= 16");
  }
  SECTION("rope: an odd head_dim") {
    const std::vector<int64_t> pos(1);
    const std::vector<float> cache(64);
    ArgPack a;
    a.add(pos.data()).add(buf.data()).add(buf.data()).add(cache.data()).add<int32_t>(1);
    a.add<int32_t>(1).add<int32_t>(1).add<int32_t>(7).add<int32_t>(7).add<int32_t>(7).add<uint8_t>(1);
    require_error(launch("kern_rope_bf16", a, 1), "kern_rope_bf16", "param 7 (head_dim) is 7");
  }
  SECTION("attention: num_heads not a multiple of num_kv_heads") {
    ArgPack a = no_work_args(kAbis[9]);  // prefill
    a.set<int32_t>(9, 6).set<int32_t>(10, 4);
    require_error(run(kAbis[9], a, a.size()), "kern_paged_attention_prefill_bf16",
                  "param 9 (num_heads) is 6; must be a multiple of param 10");
  }
  SECTION("reshape_and_cache: a page_stride smaller than one layer's page") {
    ArgPack a = no_work_args(kAbis[6]);
    a.set<int32_t>(7, 2).set<int32_t>(8, 8).set<int32_t>(9, 16).set<int32_t>(10, 16);
    a.set<int64_t>(11, 511);
    require_error(run(kAbis[6], a, a.size()), "kern_reshape_and_cache_bf16",
                  "param 11 (page_stride) is 511; must be >= 512");
  }
  SECTION("rmsnorm: a negative eps") {
    ArgPack a = no_work_args(kAbis[1]);
    a.set<float>(5, -1.0f);
    require_error(run(kAbis[1], a, a.size()), "kern_rmsnorm_bf16", "param 5 (eps)");
  }
}

TEST_CASE("paged attention partial rejects a num_splits different from grid.y",
          "[kernels][abi]") {
  const Abi& abi = kAbis[7];
  REQUIRE(std::string(abi.symbol) == "kern_paged_attention_partial_bf16");
  ArgPack a = no_work_args(abi);
  a.set<int32_t>(15, 8);
  require_error(run(abi, a, a.size()), abi.symbol, "grid.y is 16; must equal param 15 (num_splits) = 8");
}

TEST_CASE("kernels reject input data they cannot honour", "[kernels][abi]") {
  std::vector<uint16_t> buf(4096, 0);
  SECTION("rope: a negative position, before writing anything") {
    const std::vector<int64_t> pos = {3, -2};
    const std::vector<float> cache(8 * 8);
    std::vector<uint16_t> q(16, kern::f32_to_bf16(1.0f));
    ArgPack a;
    a.add(pos.data()).add(q.data()).add(buf.data()).add(cache.data()).add<int32_t>(2);
    a.add<int32_t>(1).add<int32_t>(0).add<int32_t>(8).add<int32_t>(8).add<int32_t>(0).add<uint8_t>(1);
    require_error(launch("kern_rope_bf16", a, 2), "kern_rope_bf16", "positions[1] is -2");
    for (const uint16_t x : q) CHECK(x == kern::f32_to_bf16(1.0f));
  }
  const int32_t seq_len = 4, bad_cu[2] = {0, 2}, ok_cu[2] = {0, 3}, short_len = 2;
  const std::vector<int32_t> table = {0}, bad_table = {-3};
  const float one = 1.0f;
  const auto prefill = [&](const int32_t* sl, const int32_t* cu, const int32_t* bt) {
    ArgPack a;
    a.add(buf.data()).add(buf.data()).add(bt).add(sl).add(cu).add(&one).add(&one).add(buf.data());
    a.add<int32_t>(3).add<int32_t>(2).add<int32_t>(1).add<int32_t>(8).add<int64_t>(256).add(0.35f);
    return launch("kern_paged_attention_prefill_bf16", a, 2, 3);
  };
  SECTION("attention: cu_seqlens_q that disagrees with num_tokens") {
    require_error(prefill(&seq_len, bad_cu, table.data()), "kern_paged_attention_prefill_bf16",
                  "cu_seqlens_q is [0, 2]");
  }
  SECTION("attention: a context shorter than this call's tokens") {
    require_error(prefill(&short_len, ok_cu, table.data()), "kern_paged_attention_prefill_bf16",
                  "seq_lens[0] is 2; must be >= num_tokens = 3");
  }
  SECTION("attention: a negative block table entry") {
    require_error(prefill(&seq_len, ok_cu, bad_table.data()), "kern_paged_attention_prefill_bf16",
                  "block_table[0] is -3");
  }
  SECTION("attention: valid inputs pass") {
    CHECK(prefill(&seq_len, ok_cu, table.data()).ok());
  }
}

TEST_CASE("a kernel that runs out of host memory returns an error instead of throwing",
          "[kernels][abi]") {
  // The registry hands out detail::guarded<F>; this is the same wrapper
  // around a kernel that throws.
  const kern::cpu::CpuLaunch l;
  kern::Status s;
  REQUIRE_NOTHROW(s = kern::cpu::detail::guarded<throws_bad_alloc>(l));
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().kind == kern::ErrorKind::kDevice);
  CHECK(s.error().message.find("cpu reference kernel failed") == 0);
  CHECK(kern::cpu::find_cpu_kernel("kern_rmsnorm_bf16")->run ==
        &kern::cpu::detail::guarded<kern::cpu::rmsnorm_bf16>);
  CHECK(kern::cpu::find_cpu_kernel("extern:cublaslt_bf16_tn")->run ==
        &kern::cpu::detail::guarded<kern::cpu::gemm_bf16_tn>);
}
