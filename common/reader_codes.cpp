// The reader's diagnostics catalogue (see reader_codes.h). Each explanation
// shows a failing fragment and its fix; docs/diagnostics.md and
// `kern-verify --explain` are generated from this table.
#include "common/reader_codes.h"

#include <array>

namespace kern {
namespace {

constexpr std::array<DiagnosticCodeInfo, 15> kCatalogue = {{
    {"E0001", "json syntax error",
     "The manifest is not valid JSON (RapidJSON stopped at the reported position). Invalid UTF-8,\n"
     "a leading UTF-8 byte order mark (EF BB BF, which RFC 8259 forbids) and nesting deeper than the\n"
     "reader's limit are reported here too.\n\n"
     "Failing:\n\n    {\"meta\": {\"version\": 2,}}\n\n"
     "Fixed (no trailing comma):\n\n    {\"meta\": {\"version\": 2}}\n"},
    {"E0002", "nul character in the manifest",
     "The file contains a NUL byte, or a string contains the escape \\u0000. JSON parsers written in C\n"
     "stop at a NUL, and names become C strings at run time, so both are rejected.\n\n"
     "Failing:\n\n    {\"buffers\": {\"x\\u0000y\": ...}}\n\n"
     "Fixed:\n\n    {\"buffers\": {\"xy\": ...}}\n"},
    {"E0003", "trailing characters after the json document",
     "A manifest is exactly one JSON object. Anything but whitespace after its closing brace (a second\n"
     "object, a stray bracket, an editor's leftovers) is an error.\n\n"
     "Failing:\n\n    {\"meta\": {...}, ...}}\n\n"
     "Fixed:\n\n    {\"meta\": {...}, ...}\n"},
    {"E0004", "duplicate key",
     "The same key appears twice in one object. JSON readers disagree on which value wins (RapidJSON\n"
     "keeps the first, serde the last), so kern rejects the manifest instead of guessing.\n\n"
     "Failing:\n\n    \"symbols\": {\"tokens\": {\"max\": 512}, \"tokens\": {\"max\": 1}}\n\n"
     "Fixed:\n\n    \"symbols\": {\"tokens\": {\"max\": 512}}\n"},
    {"E0005", "unknown field",
     "The object has a field the manifest v2 schema does not define. Unknown fields are rejected\n"
     "everywhere so that a typo never silently drops a setting.\n\n"
     "Failing:\n\n    \"x\": {\"dtyp\": \"bf16\", \"shape\": [4], \"class\": \"input\"}\n\n"
     "Fixed:\n\n    \"x\": {\"dtype\": \"bf16\", \"shape\": [4], \"class\": \"input\"}\n"},
    {"E0006", "wrong json type",
     "The value has the wrong JSON type for its field: e.g. a string where an integer is expected, a\n"
     "float where an integer is expected, or a bare symbol name where an expression is expected.\n\n"
     "Failing:\n\n    \"grid\": [\"tokens\", 1, 1]\n\n"
     "Fixed:\n\n    \"grid\": [{\"sym\": \"tokens\"}, 1, 1]\n"},
    {"E0007", "missing required field",
     "A field the schema requires is absent from the object (reported at the object).\n\n"
     "Failing:\n\n    \"tokens\": {\"min\": 1}\n\n"
     "Fixed:\n\n    \"tokens\": {\"min\": 1, \"max\": 512}\n"},
    {"E0008", "number out of range",
     "An integer does not fit its field's type (u32 for `meta.version` and `block`, u64 for sizes,\n"
     "i32/u32/i64/u8 for typed literals; unsigned fields reject negatives), or an f32 literal exceeds\n"
     "the f32 range.\n\n"
     "Failing:\n\n    {\"u8\": 256}\n\n"
     "Fixed:\n\n    {\"u8\": 255}\n"},
    {"E0009", "malformed parameter type",
     "A kernel or step parameter type does not match\n"
     "`^(i32|u32|i64|f32|u8|(in|out|inout) (ptr|buffer<DTYPE>))$`: pointers need a direction, exactly\n"
     "one space, and a known dtype.\n\n"
     "Failing:\n\n    \"params\": [\"buffer<bf16>\", \"in  ptr\"]\n\n"
     "Fixed:\n\n    \"params\": [\"in buffer<bf16>\", \"in ptr\"]\n"},
    {"E0010", "unknown dtype",
     "A `dtype` is not one of bf16, f16, f32, fp8e4m3, i32, u32, i64, u8.\n\n"
     "Failing:\n\n    \"dtype\": \"float32\"\n\n"
     "Fixed:\n\n    \"dtype\": \"f32\"\n"},
    {"E0011", "unknown buffer class",
     "A buffer `class` is not one of input, output, weight, workspace, carry.\n\n"
     "Failing:\n\n    \"class\": \"scratch\"\n\n"
     "Fixed:\n\n    \"class\": \"workspace\"\n"},
    {"E0012", "malformed expression",
     "An expression object must have exactly one key: `sym`, `ceil_div` or `mul`. Expressions are a\n"
     "closed template (SPEC section 3), not a language.\n\n"
     "Failing:\n\n    {\"div\": [{\"sym\": \"tokens\"}, 4]}\n\n"
     "Fixed:\n\n    {\"ceil_div\": [{\"sym\": \"tokens\"}, 4]}\n"},
    {"E0013", "wrong number of array elements",
     "A fixed-size array has the wrong length: `block` and `grid` have 3 elements, the operand arrays of\n"
     "`ceil_div` and `mul` have 2.\n\n"
     "Failing:\n\n    \"block\": [256, 1]\n\n"
     "Fixed:\n\n    \"block\": [256, 1, 1]\n"},
    {"E0014", "tagged argument without exactly one tag",
     "Dispatch arguments (`buf`, `state`, `sym`, `expr`, `i32`, `u32`, `i64`, `f32`, `u8`) and step\n"
     "arguments (`arg`, `scratch`, and the literals) are objects with exactly one tag, so a buffer name\n"
     "can never be mistaken for a symbol name. Zero tags or two tags are errors.\n\n"
     "Failing:\n\n    {\"buf\": \"x\", \"sym\": \"tokens\"}\n\n"
     "Fixed:\n\n    {\"buf\": \"x\"}, {\"sym\": \"tokens\"}\n"},
    {"E0015", "domain mixes bounds and index_into",
     "A buffer `domain` is either a value range (`min`/`max`) or an index domain (`index_into`, with\n"
     "`unit`), never both.\n\n"
     "Failing:\n\n    \"domain\": {\"min\": 0, \"index_into\": \"kv_cache\"}\n\n"
     "Fixed:\n\n    \"domain\": {\"index_into\": \"kv_cache\", \"unit\": 16}\n"},
}};

}  // namespace

std::span<const DiagnosticCodeInfo> reader_code_catalogue() { return kCatalogue; }

const DiagnosticCodeInfo* find_reader_code(std::string_view code) {
  for (const auto& c : kCatalogue) {
    if (c.code == code) return &c;
  }
  return nullptr;
}

}  // namespace kern
