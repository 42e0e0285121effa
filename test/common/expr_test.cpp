// The closed expression language: printing, and the checked u64 helpers.
#include <catch2/catch.hpp>

#include "common/expr.h"

namespace kern {
namespace {

TEST_CASE("expressions print in manifest-like form", "[expr]") {
  CHECK(Expr::constant(5).to_string() == "5");
  CHECK(Expr::symbol("tokens").to_string() == "tokens");
  CHECK(Expr::ceil_div(Expr::mul(Expr::symbol("tokens"), 32), 4).to_string() == "ceil_div(mul(tokens, 32), 4)");
}

TEST_CASE("checked helpers report overflow and zero divisors", "[expr]") {
  CHECK(checked_mul(1ULL << 32, 1ULL << 31) == std::optional<uint64_t>(1ULL << 63));
  CHECK_FALSE(checked_mul(1ULL << 32, 1ULL << 32).has_value());
  CHECK(checked_add(UINT64_MAX - 1, 1) == std::optional<uint64_t>(UINT64_MAX));
  CHECK_FALSE(checked_add(UINT64_MAX, 1).has_value());
  CHECK(checked_ceil_div(10, 3) == std::optional<uint64_t>(4));
  CHECK(checked_ceil_div(9, 3) == std::optional<uint64_t>(3));
  CHECK_FALSE(checked_ceil_div(1, 0).has_value());
  CHECK(checked_round_up(10, 8) == std::optional<uint64_t>(16));
  CHECK(checked_round_up(16, 8) == std::optional<uint64_t>(16));
  CHECK(checked_round_up(0, 256) == std::optional<uint64_t>(0));
  CHECK_FALSE(checked_round_up(UINT64_MAX - 2, 256).has_value());
  CHECK_FALSE(checked_round_up(1, 0).has_value());
}

}  // namespace
}  // namespace kern
