// The closed expression language: printing and checked evaluation.
#include <catch2/catch.hpp>

#include <map>

#include "common/expr.h"

namespace kern {
namespace {

std::optional<uint64_t> lookup(const std::string& name, const void* ctx) {
  const auto& m = *static_cast<const std::map<std::string, uint64_t>*>(ctx);
  auto it = m.find(name);
  if (it == m.end()) return std::nullopt;
  return it->second;
}

const std::map<std::string, uint64_t> kSymbols = {{"tokens", 7}, {"big", UINT64_MAX}};

TEST_CASE("expressions print in manifest-like form", "[expr]") {
  CHECK(Expr::constant(5).to_string() == "5");
  CHECK(Expr::symbol("tokens").to_string() == "tokens");
  CHECK(Expr::ceil_div(Expr::mul(Expr::symbol("tokens"), 32), 4).to_string() == "ceil_div(mul(tokens, 32), 4)");
}

TEST_CASE("expressions evaluate with symbol values", "[expr]") {
  CHECK(evaluate(Expr::constant(9), lookup, &kSymbols).value() == 9);
  CHECK(evaluate(Expr::symbol("tokens"), lookup, &kSymbols).value() == 7);
  CHECK(evaluate(Expr::mul(Expr::symbol("tokens"), 32), lookup, &kSymbols).value() == 224);
  CHECK(evaluate(Expr::ceil_div(Expr::symbol("tokens"), 2), lookup, &kSymbols).value() == 4);
  CHECK(evaluate(Expr::ceil_div(Expr::symbol("tokens"), 7), lookup, &kSymbols).value() == 1);
  CHECK(evaluate(Expr::ceil_div(Expr::constant(0), 3), lookup, &kSymbols).value() == 0);
  CHECK(evaluate(Expr::ceil_div(Expr::mul(Expr::symbol("tokens"), 32), 5), lookup, &kSymbols).value() == 45);
}

TEST_CASE("ceil_div rounds up without overflowing near u64 max", "[expr]") {
  CHECK(evaluate(Expr::ceil_div(Expr::symbol("big"), 2), lookup, &kSymbols).value() == (UINT64_MAX / 2) + 1);
  CHECK(evaluate(Expr::ceil_div(Expr::symbol("big"), 1), lookup, &kSymbols).value() == UINT64_MAX);
}

TEST_CASE("multiplication overflow is an error, not a wrap", "[expr]") {
  auto r = evaluate(Expr::mul(Expr::symbol("big"), 2), lookup, &kSymbols);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::kManifest);
  CHECK(r.error().message == "mul(big, 2): 18446744073709551615 * 2 overflows u64");
  auto nested = evaluate(Expr::ceil_div(Expr::mul(Expr::constant(1ULL << 40), 1ULL << 30), 2), lookup, &kSymbols);
  CHECK_FALSE(nested.ok());
}

TEST_CASE("ceil_div by zero is an error", "[expr]") {
  auto r = evaluate(Expr::ceil_div(Expr::symbol("tokens"), 0), lookup, &kSymbols);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "ceil_div(tokens, 0): division by zero");
}

TEST_CASE("an unknown symbol is an error", "[expr]") {
  auto r = evaluate(Expr::mul(Expr::symbol("pos"), 2), lookup, &kSymbols);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "unknown symbol `pos`");
  CHECK_FALSE(evaluate(Expr::symbol("tokens"), nullptr, nullptr).ok());
}

TEST_CASE("checked helpers report overflow and zero divisors", "[expr]") {
  CHECK(checked_mul(1ULL << 32, 1ULL << 31) == std::optional<uint64_t>(1ULL << 63));
  CHECK_FALSE(checked_mul(1ULL << 32, 1ULL << 32).has_value());
  CHECK(checked_add(UINT64_MAX - 1, 1) == std::optional<uint64_t>(UINT64_MAX));
  CHECK_FALSE(checked_add(UINT64_MAX, 1).has_value());
  CHECK(checked_ceil_div(10, 3) == std::optional<uint64_t>(4));
  CHECK(checked_ceil_div(9, 3) == std::optional<uint64_t>(3));
  CHECK_FALSE(checked_ceil_div(1, 0).has_value());
}

}  // namespace
}  // namespace kern
