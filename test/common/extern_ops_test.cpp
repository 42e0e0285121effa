// The extern-op table (common/extern_ops.h): names, ids, ABIs, help text.
#include <catch2/catch.hpp>

#include <vector>

#include "common/extern_ops.h"

namespace kern {
namespace {

TEST_CASE("extern op names map to their built-ins and nothing else does", "[extern]") {
  const ExternOpInfo* gemm = find_extern_op("extern:cublaslt_bf16_tn");
  const ExternOpInfo* acc = find_extern_op("extern:cublaslt_bf16_tn_acc");
  REQUIRE(gemm != nullptr);
  REQUIRE(acc != nullptr);
  CHECK(gemm->id == ExternOpId::kGemmBf16Tn);
  CHECK(acc->id == ExternOpId::kGemmBf16TnAcc);
  CHECK(find_extern_op("extern:cublaslt_bf16_nn") == nullptr);
  CHECK(find_extern_op("kern_rmsnorm_bf16") == nullptr);
  CHECK(extern_op_symbol(ExternOpId::kGemmBf16TnAcc) == "extern:cublaslt_bf16_tn_acc");
  CHECK(extern_op_symbol(ExternOpId::kNone).empty());
  CHECK(is_extern_symbol("extern:anything"));
  CHECK_FALSE(is_extern_symbol("kern_extern:x"));
  CHECK(extern_op_list() ==
        "extern:cublaslt_bf16_tn, extern:cublaslt_bf16_tn_acc, extern:gemm_bf16_tn_splitk, "
        "extern:gemm_bf16_tn_splitk_f32, extern:allreduce_sum_f32, extern:allreduce_sum_f32_bf16");
}

TEST_CASE("only the all-reduces are collectives, with their own abis", "[extern][parallel]") {
  for (const ExternOpInfo& op : kExternOps)
    CHECK(op.collective ==
          (op.id == ExternOpId::kAllReduceSumF32 || op.id == ExternOpId::kAllReduceSumF32Bf16));
  CHECK(extern_op_params_text(*find_extern_op("extern:allreduce_sum_f32")) == "inout buffer<f32>, i32");
  CHECK(extern_op_params_text(*find_extern_op("extern:allreduce_sum_f32_bf16")) ==
        "inout buffer<f32>, out buffer<bf16>, i32");
  CHECK(extern_op_params_text(*find_extern_op("extern:gemm_bf16_tn_splitk_f32")) ==
        "in buffer<bf16>, in buffer<bf16>, out buffer<f32>, i32, i32, i32, i32");
}

TEST_CASE("an extern op's params must equal its abi exactly", "[extern]") {
  const ExternOpInfo& gemm = *find_extern_op("extern:cublaslt_bf16_tn");
  CHECK(extern_op_params_text(gemm) == "in buffer<bf16>, in buffer<bf16>, out buffer<bf16>, i32, i32, i32");
  CHECK(extern_op_params_text(*find_extern_op("extern:cublaslt_bf16_tn_acc")) ==
        "in buffer<bf16>, in buffer<bf16>, inout buffer<bf16>, i32, i32, i32");
  std::vector<ParamType> params(gemm.param_list().begin(), gemm.param_list().end());
  CHECK(extern_op_params_match(gemm, params));
  params[2].access = Access::kInOut;  // the _acc variant's c
  CHECK_FALSE(extern_op_params_match(gemm, params));
  params.pop_back();
  CHECK_FALSE(extern_op_params_match(gemm, params));
}

}  // namespace
}  // namespace kern
