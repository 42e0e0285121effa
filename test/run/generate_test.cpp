// Greedy generation through the Qwen3 caller contract on the tiny model and
// the cpu reference device. Token ids are compared exactly: the cpu device
// is deterministic (same inputs, same kernels, same order), so no tolerance.
#include <catch2/catch.hpp>

#include "test/run/tiny_model.h"

using namespace kern;
using namespace kern::test;

namespace {

const std::vector<int64_t> kPrompt = {3, 17, 99, 200, 5, 42, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22};

std::vector<int64_t> generate_ids(const std::vector<int64_t>& prompt, uint64_t steps, uint64_t chunk) {
  TinyModel m = load_tiny_model();
  auto r = run::generate(*m.exe, m.contract, {prompt, steps, chunk, m.capacity});
  if (!r.ok()) FAIL(r.error().message);
  CHECK(r->generated_ids.size() == steps);
  return r->generated_ids;
}

/// Feeds every prompt token through `decode` (no prefill program at all):
/// the reference that chunked prefill must reproduce.
std::vector<int64_t> decode_only_ids(const std::vector<int64_t>& prompt, uint64_t steps) {
  TinyModel m = load_tiny_model();
  const run::Qwen3Contract& c = m.contract;
  load::Executable& exe = *m.exe;
  std::vector<int32_t> table(c.block_table_pages);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>(i);
  auto bytes = [](const void* p, size_t n) { return std::span(static_cast<const uint8_t*>(p), n); };
  REQUIRE(exe.write_input(c.block_table, bytes(table.data(), table.size() * 4)).ok());
  const int32_t cu[2] = {0, 1};
  REQUIRE(exe.write_input(c.cu_seqlens_q, bytes(cu, 8)).ok());
  std::vector<int64_t> out;
  std::vector<uint64_t> symbols = {1};
  int64_t token = prompt[0];
  for (int64_t pos = 0; out.size() < steps; ++pos) {
    int32_t seq_len = static_cast<int32_t>(pos + 1);
    REQUIRE(exe.write_input(c.token_ids, bytes(&token, 8)).ok());
    REQUIRE(exe.write_input(c.positions, bytes(&pos, 8)).ok());
    REQUIRE(exe.write_input(c.slot_mapping, bytes(&pos, 8)).ok());
    REQUIRE(exe.write_input(c.seq_lens, bytes(&seq_len, 4)).ok());
    REQUIRE(exe.run_program(c.decode, symbols).ok());
    int64_t next = 0;
    REQUIRE(exe.read_buffer(c.next_token, std::span(reinterpret_cast<uint8_t*>(&next), 8)).ok());
    bool in_prompt = static_cast<size_t>(pos + 1) < prompt.size();
    if (!in_prompt) out.push_back(next);
    token = in_prompt ? prompt[static_cast<size_t>(pos + 1)] : next;
  }
  return out;
}

}  // namespace

TEST_CASE("the tiny model's contract is resolved from the plan", "[run][contract]") {
  TinyModel m = load_tiny_model();
  CHECK(m.contract.vocab == 256);
  CHECK(m.contract.block_table_pages == 64);  // ceil(1024 / 16)
  CHECK(m.contract.tokens_max == 512);
  CHECK(m.capacity == 1024);
}

TEST_CASE("generated ids are reproducible across two runs", "[run][generate]") {
  auto a = generate_ids(kPrompt, 12, 512);
  auto b = generate_ids(kPrompt, 12, 512);
  CHECK(a == b);
}

TEST_CASE("prefill chunk sizes 1, 4 and 16 generate the same ids as feeding every token through decode",
          "[run][generate]") {
  auto reference = decode_only_ids(kPrompt, 10);
  for (uint64_t chunk : {1, 4, 16, 512}) {
    INFO("chunk " << chunk);
    CHECK(generate_ids(kPrompt, 10, chunk) == reference);
  }
}

TEST_CASE("the prompt's early tokens reach the generated ids through the KV cache", "[run][generate]") {
  // Teeth for the prefill path: if prefill wrote nothing (or the wrong slots),
  // changing only the first token could not change the output.
  std::vector<int64_t> other = kPrompt;
  other[0] = 250;
  other[1] = 1;
  CHECK(generate_ids(kPrompt, 10, 4) != generate_ids(other, 10, 4));
}

TEST_CASE("a one-token prompt skips prefill and decodes directly", "[run][generate]") {
  TinyModel m = load_tiny_model();
  auto r = run::generate(*m.exe, m.contract, {{100}, 3, 512, m.capacity});
  REQUIRE(r.ok());
  CHECK(r->prefill_chunks == 0);
  CHECK(r->decode_steps == 2);
  CHECK(r->generated_ids == decode_only_ids({100}, 3));
}

TEST_CASE("the chunk is clamped to the tokens bound and counts prefill runs", "[run][generate]") {
  TinyModel m = load_tiny_model();
  std::vector<int64_t> prompt(600, 7);
  auto r = run::generate(*m.exe, m.contract, {prompt, 1, 10000, m.capacity});
  REQUIRE(r.ok());
  CHECK(r->chunk == 512);
  CHECK(r->prefill_chunks == 2);  // 599 tokens: 512 + 87
}

TEST_CASE("generation requests are checked before anything runs", "[run][generate]") {
  TinyModel m = load_tiny_model(64);
  const run::Qwen3Contract& c = m.contract;
  auto err = [&](run::GenerateRequest r) {
    Status s = run::check_request(c, r);
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().kind == ErrorKind::kUsage);
    return s.error().message;
  };
  CHECK(err({{}, 1, 4, 64}) == "the prompt is empty: give at least one token id with --prompt-ids");
  CHECK(err({{1}, 0, 4, 64}) == "--steps must be at least 1");
  CHECK(err({{1}, 1, 0, 64}) == "--chunk must be at least 1");
  CHECK(err({{1, 256}, 1, 4, 64}) ==
        "prompt id 256 at index 1 is outside the vocabulary [0, 256) (the logits buffer's last dimension)");
  CHECK(err({{-1}, 1, 4, 64}) ==
        "prompt id -1 at index 0 is outside the vocabulary [0, 256) (the logits buffer's last dimension)");
  CHECK(err({std::vector<int64_t>(60, 1), 5, 4, 64}) ==
        "prompt (60 tokens) + steps (5) = 65 tokens exceeds the capacity 64 tokens");
  CHECK(err({{1}, 1, 4, 1040}) == "capacity 1040 tokens exceeds the block table (64 pages x 16 = 1024 tokens)");
  CHECK(run::check_request(c, {std::vector<int64_t>(60, 1), 4, 4, 64}).ok());
}
