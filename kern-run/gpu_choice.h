// Which GPU each rank of `kern-run --tp N --device cuda` uses (docs/parallel.md
// "On GPUs"): `--gpus 0,1,...` lists the CUDA ordinals of ranks 0, 1, ...;
// without it rank r takes ordinal r, the first N visible GPUs (after
// CUDA_VISIBLE_DEVICES, which the driver applies). Checked on rank 0 before
// any rank starts or anything loads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace kern::run {

/// Parses `--gpus` ("0,2,3"): distinct ordinals >= 0. Empty text: none.
/// Errors (kUsage): a field that is no number (named with its position), a
/// duplicate, fewer than `tp` entries.
Result<std::vector<int>> parse_gpus(const std::string& text, uint32_t tp);

/// The ordinal of `rank`: gpus[rank], or `rank` when gpus is empty.
int gpu_of_rank(const std::vector<int>& gpus, uint32_t rank);

/// Checks the choice against the `visible` GPUs (cuDeviceGetCount): fewer
/// than `tp`, or an ordinal >= visible, is a kUsage error naming both
/// ("--tp 2 needs 2 GPUs; 1 is visible").
Status check_gpus(const std::vector<int>& gpus, uint32_t tp, int visible);

}  // namespace kern::run
