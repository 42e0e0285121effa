// kern_last_row (docs/kernels.md §14a) against its formula: row 0 becomes
// row rows - 1 byte for byte, every other row is untouched; one row or
// none moves nothing; the extents cover rows 0 .. rows - 1; a negative
// size is refused.
#include "test/kernels/kernel_test_util.h"

using namespace kern::cpu::test;

TEST_CASE("last_row moves the last row to row 0 in place, the rest untouched", "[kernels][last_row]") {
  std::mt19937 rng(46);
  for (const auto& [rows, row_bytes] : std::vector<std::pair<int, int>>{{2, 8}, {5, 8}, {32, 2048}, {3, 6}, {7, 1}}) {
    std::vector<uint8_t> x0(static_cast<size_t>(rows) * row_bytes);
    for (auto& v : x0) v = static_cast<uint8_t>(rng());
    std::vector<uint8_t> x = x0;
    ArgPack a;
    a.add(x.data()).add<int32_t>(rows).add<int32_t>(row_bytes);
    launch_ok("kern_last_row", a, 1);
    INFO("rows " << rows << " row_bytes " << row_bytes);
    for (int i = 0; i < row_bytes; ++i) CHECK(x[i] == x0[static_cast<size_t>(rows - 1) * row_bytes + i]);
    CHECK(std::equal(x.begin() + row_bytes, x.end(), x0.begin() + row_bytes));
  }
}

TEST_CASE("last_row of one row (or none) leaves the buffer alone and needs no grid", "[kernels][last_row]") {
  std::vector<uint8_t> x = {1, 2, 3, 4};
  const std::vector<uint8_t> x0 = x;
  ArgPack a;
  a.add(x.data()).add<int32_t>(1).add<int32_t>(4);
  launch_ok("kern_last_row", a, 1);
  CHECK(x == x0);
  ArgPack none;
  none.add(static_cast<uint8_t*>(nullptr)).add<int32_t>(0).add<int32_t>(4);
  launch_ok("kern_last_row", none, 0);
}

TEST_CASE("last_row declares rows x row_bytes and refuses a negative size", "[kernels][last_row]") {
  std::vector<uint8_t> x(24);
  ArgPack a;
  a.add(x.data()).add<int32_t>(3).add<int32_t>(8);
  const kern::cpu::CpuKernel* k = kern::cpu::find_cpu_kernel("kern_last_row");
  REQUIRE(k != nullptr);
  kern::cpu::CpuLaunch l;
  l.args = a.data();
  l.num_args = a.size();
  kern::cpu::CpuExtents e;
  REQUIRE(k->extents(l, e).ok());
  CHECK(e.bytes[0] == 24);
  ArgPack bad;
  bad.add(x.data()).add<int32_t>(-2).add<int32_t>(8);
  const kern::Status s = launch("kern_last_row", bad, 1);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("param 1 (rows) is -2") != std::string::npos);
}
