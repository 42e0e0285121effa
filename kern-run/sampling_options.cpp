// kern-run's sampling options (sampling_options.h).
#include "kern-run/sampling_options.h"

#include <cstdio>
#include <random>

namespace kern::run {

uint64_t random_seed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) | rd();
}

Result<engine::SamplingParams> sampling_from_options(const RunOptions& o) {
  engine::SamplingParams p{o.temperature, o.top_k, o.top_p, o.min_p, o.seed.value_or(0)};
  KERN_RETURN_IF_ERROR(engine::check_sampling(p), "--temperature/--top-p/--min-p");
  if (!p.greedy() && !o.seed) {
    p.seed = random_seed();
    // Always shown (like llama.cpp's sampler seed line), not only with -v: a
    // run without --seed is repeatable only through it.
    std::fprintf(stderr, "kern-run: sampling with seed %llu (pass --seed %llu to repeat)\n",
                 static_cast<unsigned long long>(p.seed), static_cast<unsigned long long>(p.seed));
  }
  return p;
}

}  // namespace kern::run
