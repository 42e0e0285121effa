// Lookups over the extern-op table (extern_ops.h).
#include "common/extern_ops.h"

#include <algorithm>

namespace kern {

const ExternOpInfo* find_extern_op(std::string_view symbol) {
  for (const ExternOpInfo& op : kExternOps)
    if (op.symbol == symbol) return &op;
  return nullptr;
}

std::string extern_op_list() {
  std::string out;
  for (const ExternOpInfo& op : kExternOps) out += (out.empty() ? "" : ", ") + std::string(op.symbol);
  return out;
}

std::string extern_op_params_text(const ExternOpInfo& op) {
  std::string out;
  for (const ParamType& p : op.param_list()) out += (out.empty() ? "" : ", ") + param_type_name(p);
  return out;
}

bool extern_op_params_match(const ExternOpInfo& op, std::span<const ParamType> params) {
  const std::span<const ParamType> abi = op.param_list();
  return std::equal(abi.begin(), abi.end(), params.begin(), params.end());
}

}  // namespace kern
