// The GPUs of the ranks (gpu_choice.h).
#include "kern-run/gpu_choice.h"

#include <algorithm>
#include <charconv>

namespace kern::run {

Result<std::vector<int>> parse_gpus(const std::string& text, uint32_t tp) {
  std::vector<int> out;
  if (text.empty()) return out;
  size_t start = 0;
  for (size_t field = 1;; ++field) {
    const size_t comma = text.find(',', start);
    const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    int v = -1;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || end != part.data() + part.size() || v < 0)
      return make_error(ErrorKind::kUsage, "--gpus: entry " + std::to_string(field) + " ('" + part +
                                               "') is not a CUDA ordinal (expected e.g. --gpus 0,1)");
    if (std::find(out.begin(), out.end(), v) != out.end())
      return make_error(ErrorKind::kUsage, "--gpus: GPU " + std::to_string(v) + " is listed twice (one rank per GPU)");
    out.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (out.size() < tp)
    return make_error(ErrorKind::kUsage, "--gpus lists " + std::to_string(out.size()) + " GPU" +
                                             (out.size() == 1 ? "" : "s") + " but --tp " + std::to_string(tp) +
                                             " needs one per rank");
  return out;
}

int gpu_of_rank(const std::vector<int>& gpus, uint32_t rank) {
  return rank < gpus.size() ? gpus[rank] : static_cast<int>(rank);
}

Status check_gpus(const std::vector<int>& gpus, uint32_t tp, int visible) {
  if (visible < static_cast<int>(tp))
    return make_error(ErrorKind::kUsage, "--tp " + std::to_string(tp) + " needs " + std::to_string(tp) +
                                             " GPUs; " + std::to_string(visible) + (visible == 1 ? " is" : " are") +
                                             " visible (CUDA_VISIBLE_DEVICES and the driver decide which)");
  for (int g : gpus)
    if (g >= visible)
      return make_error(ErrorKind::kUsage, "--gpus names GPU " + std::to_string(g) + " but only " +
                                               std::to_string(visible) + " are visible (ordinals 0.." +
                                               std::to_string(visible - 1) + ")");
  return Status::ok_status();
}

}  // namespace kern::run
