// Tokenizer speed (style.md §5: measured here, not by timed tests): load time
// of Qwen3's tokenizer.json, then encode and decode throughput on (a) ~4 MB
// of mixed text (the conformance strings, repeated), (b) ~2 MB of random
// lowercase "words" (BPE cache mostly misses), (c) each conformance string
// encoded by its own call. Run: meson test -C build --benchmark, or directly
// with KERN_QWEN3_TOKENIZER_JSON and KERN_TOKENIZER_TEST_DIR set. Times are
// process CPU seconds (single-threaded work), steadier than wall time on a
// shared machine.
#include <rapidjson/document.h>

#include <algorithm>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kern-run/tokenizer/tokenizer.h"

namespace {

/// Process CPU time, a stand-in for a clock's now().
struct Clock {
  using time_point = std::clock_t;
  static time_point now() { return std::clock(); }
};

double seconds_since(Clock::time_point t0) {
  return static_cast<double>(std::clock() - t0) / CLOCKS_PER_SEC;
}

std::vector<std::string> read_cases(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  rapidjson::Document doc;
  doc.Parse(s.str().c_str());
  std::vector<std::string> out;
  if (doc.HasParseError() || !doc.IsObject()) return out;
  for (auto it = doc["encode"].MemberBegin(); it != doc["encode"].MemberEnd(); ++it) {
    for (const auto& text : it->value.GetArray()) out.emplace_back(text.GetString(), text.GetStringLength());
  }
  return out;
}

void report(const char* what, const kern::tok::Tokenizer& tok, const std::string& text) {
  auto t0 = Clock::now();
  auto ids = tok.encode(text);
  const double enc = seconds_since(t0);
  if (!ids.ok()) {
    std::printf("%s: encode failed: %s\n", what, ids.error().message.c_str());
    return;
  }
  t0 = Clock::now();
  const std::string back = tok.decode(*ids);
  const double dec = seconds_since(t0);
  const double mb = static_cast<double>(text.size()) / 1e6;
  std::printf("%-34s %6.2f MB -> %8zu ids: encode %7.1f MB/s, decode %7.1f MB/s%s\n", what, mb, ids->size(),
              mb / enc, mb / dec, back == text ? "" : " (round trip differs: non-NFC input)");
}

}  // namespace

int main() {
  const char* tokenizer_path = std::getenv("KERN_QWEN3_TOKENIZER_JSON");
  const char* test_dir = std::getenv("KERN_TOKENIZER_TEST_DIR");
  if (tokenizer_path == nullptr || test_dir == nullptr) {
    std::fprintf(stderr, "set KERN_QWEN3_TOKENIZER_JSON and KERN_TOKENIZER_TEST_DIR\n");
    return 2;
  }
  double best_load = 1e9;
  kern::tok::Tokenizer* tok = nullptr;
  std::vector<kern::tok::Tokenizer> keep;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = Clock::now();
    auto loaded = kern::tok::Tokenizer::load(tokenizer_path);
    best_load = std::min(best_load, seconds_since(t0));
    if (!loaded.ok()) {
      std::fprintf(stderr, "%s\n", loaded.error().message.c_str());
      return 1;
    }
    keep.push_back(*loaded);
  }
  tok = &keep.back();
  std::printf("load %s: %.1f ms CPU time (best of 3)\n", tokenizer_path, best_load * 1e3);

  const std::vector<std::string> cases = read_cases(std::string(test_dir) + "/qwen3_cases.json");
  std::string mixed;
  while (mixed.size() < 4'000'000) {
    for (const std::string& c : cases) (mixed += c) += ' ';
  }
  report("mixed text (conformance strings)", *tok, mixed);

  std::mt19937 rng(12345);
  std::string words;
  while (words.size() < 2'000'000) {
    const int len = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < len; ++i) words += static_cast<char>('a' + rng() % 26);
    words += rng() % 10 == 0 ? ".\n" : " ";
  }
  report("random lowercase words", *tok, words);

  size_t bytes = 0;
  const auto t0 = Clock::now();
  for (int round = 0; round < 20; ++round) {
    for (const std::string& c : cases) {
      auto ids = tok->encode(c);
      bytes += c.size();
      if (!ids.ok()) return 1;
    }
  }
  const double s = seconds_since(t0);
  std::printf("%-34s %6.2f MB in %zu calls: encode %7.1f MB/s (%.1f us per call)\n", "one call per string",
              bytes / 1e6, cases.size() * 20, bytes / 1e6 / s, s * 1e6 / (cases.size() * 20));
  return 0;
}
