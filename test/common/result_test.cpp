// Error values (common/result.h): KERN_RETURN_IF_ERROR and
// KERN_ASSIGN_OR_RETURN with and without context, and join.
#include <catch2/catch.hpp>

#include <memory>

#include "common/result.h"

namespace kern {
namespace {

Result<int> parse_digit(char c) {
  if (c < '0' || c > '9') return make_error(ErrorKind::kManifest, std::string("'") + c + "' is not a digit");
  return c - '0';
}

Status check_digit(char c) {
  KERN_RETURN_IF_ERROR(parse_digit(c));
  return {};
}

int context_calls = 0;
std::string counted_context(const std::string& s) {
  ++context_calls;
  return s;
}

Status check_digit_in(char c, const std::string& where) {
  KERN_RETURN_IF_ERROR(parse_digit(c), counted_context(where));
  return {};
}

Result<int> add_digits(char a, char b) {
  KERN_ASSIGN_OR_RETURN(int x, parse_digit(a));
  KERN_ASSIGN_OR_RETURN(const int y, parse_digit(b), "second digit");
  return x + y;
}

Result<std::unique_ptr<int>> boxed(int v) { return std::make_unique<int>(v); }

Result<int> unbox() {
  std::unique_ptr<int> p;
  KERN_ASSIGN_OR_RETURN(p, boxed(7));  // assigns to an existing variable, moving the value
  return *p;
}

TEST_CASE("KERN_RETURN_IF_ERROR returns the error as it is, or with its context", "[result]") {
  CHECK(check_digit('3').ok());
  Status s = check_digit('x');
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().kind == ErrorKind::kManifest);
  CHECK(s.error().message == "'x' is not a digit");
  context_calls = 0;
  CHECK(check_digit_in('4', "field a").ok());
  CHECK(context_calls == 0);  // the context is built only on failure
  Status c = check_digit_in('y', "field a");
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().message == "field a: 'y' is not a digit");
  CHECK(context_calls == 1);
}

TEST_CASE("KERN_ASSIGN_OR_RETURN declares or assigns the value, or returns the error", "[result]") {
  REQUIRE(add_digits('2', '5').ok());
  CHECK(add_digits('2', '5').value() == 7);
  CHECK(add_digits('z', '5').error().message == "'z' is not a digit");
  CHECK(add_digits('2', 'q').error().message == "second digit: 'q' is not a digit");
  REQUIRE(unbox().ok());
  CHECK(unbox().value() == 7);
}

TEST_CASE("join keeps the first failure and appends a later one", "[result]") {
  const Status ok;
  const Status a = make_error(ErrorKind::kDevice, "launch failed");
  const Status b = make_error(ErrorKind::kIo, "free failed");
  CHECK(join(ok, ok).ok());
  CHECK(join(ok, b).error().message == "free failed");
  CHECK(join(ok, b).error().kind == ErrorKind::kIo);
  CHECK(join(a, ok).error().message == "launch failed");
  const Status both = join(a, b);
  CHECK(both.error().kind == ErrorKind::kDevice);
  CHECK(both.error().message == "launch failed; then: free failed");
}

TEST_CASE("StatusJoin joins the first failures of a cleanup loop in order and counts the rest", "[result]") {
  StatusJoin none;
  none.add(Status{});
  CHECK(none.status().ok());

  StatusJoin all;
  all.add(Status{});
  for (int i = 0; i < StatusJoin::kShown + 3; ++i)
    all.add(make_error(i == 0 ? ErrorKind::kDevice : ErrorKind::kIo, "cuMemFree " + std::to_string(i)));
  const Status s = all.status();
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().kind == ErrorKind::kDevice);
  CHECK(s.error().message == "cuMemFree 0; then: cuMemFree 1; then: cuMemFree 2; then: cuMemFree 3; and 3 more");
}

}  // namespace
}  // namespace kern
