// libFuzzer target: the tokenizer.json reader (kern-run/tokenizer
// Tokenizer::from_json) on arbitrary bytes. A document it accepts must then
// encode a fixed text (which exercises its split patterns, normalizer, BPE
// merges and added tokens) and decode the ids back; a document it rejects
// must produce an error. Never a crash, an out-of-bounds access, deep
// recursion or an exception. Built by test/fuzz/build.sh.
#include <cstddef>
#include <cstdint>
#include <string>

#include "kern-run/tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto tok = kern::tok::Tokenizer::from_json(std::string(reinterpret_cast<const char*>(data), size), "fuzz.json");
  if (!tok.ok()) return 0;
  auto ids = tok->encode("Hello, world! 123 <|im_start|>user\n\xc3\xa9t\xc3\xa9  tab\there\r\n");
  if (!ids.ok()) return 0;
  (void)tok->decode(*ids, false);
  (void)tok->decode(*ids, true);
  return 0;
}
