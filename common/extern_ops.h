// The runtime built-ins a step may name as `extern:<op>` (SPEC §3,
// docs/kernels.md §10, docs/parallel.md): the one table of their names,
// parameter ABIs and meanings: the GEMMs, the split-K GEMMs of tensor
// parallelism and the collectives. The verifier checks steps against it and prints it in help, the
// lowering and both devices resolve names through it (the cpu registry, the
// cuda device's cublasLt path); no other source file spells an op's name.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "common/dtype.h"

namespace kern {

/// The prefix that marks a step symbol as a runtime built-in, not a kernel
/// in a cubin.
inline constexpr std::string_view kExternPrefix = "extern:";

/// Which built-in a step names. kNone: not a built-in.
enum class ExternOpId : uint8_t {
  kNone,
  kGemmBf16Tn,
  kGemmBf16TnAcc,
  kGemmBf16TnSplitK,     ///< bf16 out: the TP=1 twin of the row-split projections (docs/parallel.md)
  kGemmBf16TnSplitKF32,  ///< f32 out: a rank's partial sum, before the all-reduce
  kAllReduceSumF32,      ///< in-place f32 sum over the ranks, fixed order
  kAllReduceSumF32Bf16,  ///< the same, then rounded once to a bf16 output
};

/// The most params a built-in takes.
inline constexpr size_t kMaxExternParams = 8;

/// One built-in: its full symbol, its exact parameter ABI (what a step's
/// `params` must equal) and what it computes. The GEMMs are row-major
/// C[m, n] = A[m, k] @ W[n, k]^T with f32 accumulation; `_acc` adds into C.
/// A collective (`collective`) exchanges data between the ranks of a
/// tensor-parallel world: the verifier allows it only in a manifest whose
/// meta.world is above 1 (docs/parallel.md).
struct ExternOpInfo {
  ExternOpId id = ExternOpId::kNone;
  std::string_view symbol;                            ///< e.g. "extern:cublaslt_bf16_tn"
  std::array<ParamType, kMaxExternParams> params{};   ///< the first num_params are the ABI
  size_t num_params = 0;
  std::string_view description;                       ///< one line, for help and docs
  bool collective = false;

  /// The ABI: params[0 .. num_params).
  constexpr std::span<const ParamType> param_list() const { return {params.data(), num_params}; }
};

namespace detail {
inline constexpr ParamType extern_buf(Access a) { return ParamType{ParamKind::kBuffer, a, DType::kBf16}; }
inline constexpr ParamType extern_f32(Access a) { return ParamType{ParamKind::kBuffer, a, DType::kF32}; }
inline constexpr ParamType kExternI32{ParamKind::kI32, Access::kIn, DType::kBf16};
}  // namespace detail

/// Every built-in, in a stable order.
inline constexpr std::array<ExternOpInfo, 6> kExternOps = {{
    {ExternOpId::kGemmBf16Tn,
     "extern:cublaslt_bf16_tn",
     {detail::extern_buf(Access::kIn), detail::extern_buf(Access::kIn), detail::extern_buf(Access::kOut),
      detail::kExternI32, detail::kExternI32, detail::kExternI32},
     6,
     "c[m, n] = bf16(a[m, k] . w[n, k]^T), f32 accumulation"},
    {ExternOpId::kGemmBf16TnAcc,
     "extern:cublaslt_bf16_tn_acc",
     {detail::extern_buf(Access::kIn), detail::extern_buf(Access::kIn), detail::extern_buf(Access::kInOut),
      detail::kExternI32, detail::kExternI32, detail::kExternI32},
     6,
     "c[m, n] = bf16(c + a[m, k] . w[n, k]^T), f32 accumulation"},
    // The split-K GEMMs (docs/parallel.md): k cut into `splits` equal slices,
    // each slice's dot in cublaslt_bf16_tn's order, the slice sums added as
    // a pairwise tree over the slices (s0 + s1, s2 + s3, then those, ...).
    {ExternOpId::kGemmBf16TnSplitK,
     "extern:gemm_bf16_tn_splitk",
     {detail::extern_buf(Access::kIn), detail::extern_buf(Access::kIn), detail::extern_buf(Access::kOut),
      detail::kExternI32, detail::kExternI32, detail::kExternI32, detail::kExternI32},
     7,
     "c[m, n] = bf16(pairwise sum over `splits` k slices of a . w^T), f32 accumulation"},
    {ExternOpId::kGemmBf16TnSplitKF32,
     "extern:gemm_bf16_tn_splitk_f32",
     {detail::extern_buf(Access::kIn), detail::extern_buf(Access::kIn), detail::extern_f32(Access::kOut),
      detail::kExternI32, detail::kExternI32, detail::kExternI32, detail::kExternI32},
     7,
     "c[m, n] = f32 pairwise sum over `splits` k slices of a[m, k] . w[n, k]^T"},
    // The collectives (docs/parallel.md): every rank passes the same count;
    // the ranks' values are added as a pairwise tree in rank order, so every
    // rank gets the same bits and TP=N continues TP=1's split-K tree.
    {ExternOpId::kAllReduceSumF32,
     "extern:allreduce_sum_f32",
     {detail::extern_f32(Access::kInOut), detail::kExternI32},
     2,
     "x[count] = sum of x over the ranks (f32, pairwise in rank order), in place",
     true},
    {ExternOpId::kAllReduceSumF32Bf16,
     "extern:allreduce_sum_f32_bf16",
     {detail::extern_f32(Access::kInOut), detail::extern_buf(Access::kOut), detail::kExternI32},
     3,
     "x[count] = sum of x over the ranks (f32, pairwise in rank order), y[count] = bf16(x)",
     true},
}};

/// True when `symbol` starts with "extern:" (known op or not).
constexpr bool is_extern_symbol(std::string_view symbol) { return symbol.substr(0, kExternPrefix.size()) == kExternPrefix; }

/// The full symbol of built-in `id` ("" for kNone).
constexpr std::string_view extern_op_symbol(ExternOpId id) {
  for (const ExternOpInfo& op : kExternOps)
    if (op.id == id) return op.symbol;
  return {};
}

/// The built-in named `symbol` ("extern:" included); nullptr if none is.
const ExternOpInfo* find_extern_op(std::string_view symbol);

/// "extern:a, extern:b": every built-in's symbol, for help lines.
std::string extern_op_list();

/// "in buffer<bf16>, in buffer<bf16>, out buffer<bf16>, i32, i32, i32": the
/// ABI of `op` in manifest spelling.
std::string extern_op_params_text(const ExternOpInfo& op);

/// True when `params` equals the ABI of `op` exactly (ParamType equality).
bool extern_op_params_match(const ExternOpInfo& op, std::span<const ParamType> params);

}  // namespace kern
