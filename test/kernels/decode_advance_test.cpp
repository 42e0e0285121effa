// The decode step advance (docs/kernels.md §11) against its exact formulas:
// token fed back from the last row, position + 1, the slot through a
// non-identity block table (page boundaries, the table's end), seq_lens + 1,
// and that rows other than 0 are left alone.
#include "test/kernels/kernel_test_util.h"

using namespace kern::cpu::test;

namespace {

struct Carry {
  std::vector<int64_t> next, ids, pos, slot;
  std::vector<int32_t> seq = {0};
};

/// Runs kern_decode_advance on `c` with `table` and `tokens` rows.
kern::Status advance(Carry& c, const std::vector<int32_t>& table, int tokens, int page_size = 16,
                     uint32_t grid = 1) {
  ArgPack a;
  a.add(c.next.data()).add(table.data()).add(c.ids.data()).add(c.pos.data()).add(c.slot.data());
  a.add(c.seq.data()).add<int32_t>(tokens).add<int32_t>(static_cast<int32_t>(table.size()));
  a.add<int32_t>(page_size);
  return launch("kern_decode_advance", a, grid, 1, 1, 1);
}

/// The documented slot of position p: block_table[p / 16] * 16 + p % 16, or -1 outside the table.
int64_t expected_slot(const std::vector<int32_t>& table, int64_t p) {
  const int64_t page = p / 16;
  return p >= 0 && page < static_cast<int64_t>(table.size()) ? int64_t{table[page]} * 16 + p % 16 : -1;
}

}  // namespace

TEST_CASE("decode advance feeds the token back and advances position, slot and length",
          "[kernels][decode_advance]") {
  const std::vector<int32_t> table = {5, 2, 9, 0};  // not the identity: slots go through the table
  for (int64_t p0 : {0, 1, 14, 15, 16, 31, 62}) {
    INFO("position " << p0);
    Carry c{{4242}, {7}, {p0}, {-9}, {static_cast<int32_t>(p0 + 1)}};
    REQUIRE(advance(c, table, 1).ok());
    CHECK(c.ids[0] == 4242);
    CHECK(c.pos[0] == p0 + 1);
    CHECK(c.slot[0] == expected_slot(table, p0 + 1));
    CHECK(c.seq[0] == p0 + 2);
  }
  // Spot values of the formula, written out: position 15 -> 16 is page 1 (physical 2), slot 32.
  Carry c{{1}, {0}, {15}, {0}, {16}};
  REQUIRE(advance(c, table, 1).ok());
  CHECK(c.slot[0] == 32);
}

TEST_CASE("decode advance gives slot -1 past the block table", "[kernels][decode_advance]") {
  const std::vector<int32_t> table = {0, 1};
  Carry c{{3}, {0}, {31}, {31}, {32}};
  REQUIRE(advance(c, table, 1).ok());
  CHECK(c.pos[0] == 32);
  CHECK(c.slot[0] == -1);  // the KV-cache write skips it
  CHECK(c.seq[0] == 33);
}

TEST_CASE("decode advance reads the last row and writes row 0 only", "[kernels][decode_advance]") {
  const std::vector<int32_t> table = {0, 1, 2, 3};
  Carry c{{10, 11, 12}, {1, 2, 3}, {20, 21, 22}, {20, 21, 22}, {23}};
  REQUIRE(advance(c, table, 3).ok());
  CHECK(c.ids == std::vector<int64_t>{12, 2, 3});
  CHECK(c.pos == std::vector<int64_t>{23, 21, 22});
  CHECK(c.slot == std::vector<int64_t>{23, 21, 22});
  CHECK(c.seq[0] == 24);
}

TEST_CASE("decode advance with no tokens writes nothing; a zero grid is refused", "[kernels][decode_advance]") {
  const std::vector<int32_t> table = {0};
  Carry c{{5}, {6}, {7}, {8}, {9}};
  REQUIRE(advance(c, table, 0).ok());
  CHECK(c.ids[0] == 6);
  CHECK(c.pos[0] == 7);
  CHECK(c.slot[0] == 8);
  CHECK(c.seq[0] == 9);
  const kern::Status s = advance(c, table, 1, 16, 0);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message == "kern_decode_advance: grid.x is 0; must be >= 1 (one block)");
  const kern::Status z = advance(c, table, 1, 0);
  REQUIRE_FALSE(z.ok());
  CHECK(z.error().message == "kern_decode_advance: param 8 (page_size) is 0; must be >= 1");
}
