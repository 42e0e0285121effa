// The safetensors reader: a good file, and each malformed-header case.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>

#include "kern-load/safetensors.h"
#include "test/load/test_files.h"

using namespace kern;
using namespace kern::test;
using Catch::Matchers::Contains;

namespace {

std::vector<uint8_t> data_of(size_t n) {
  std::vector<uint8_t> d(n);
  for (size_t i = 0; i < n; ++i) d[i] = static_cast<uint8_t>(i * 7 + 1);
  return d;
}

/// Writes a safetensors file and returns the open() error message.
std::string error_of(const std::string& header, size_t data_bytes, uint64_t header_len = UINT64_MAX) {
  TempDir dir;
  std::string path = dir.file("w.safetensors");
  write_bytes(path, safetensors_bytes(header, data_of(data_bytes), header_len));
  auto r = load::Safetensors::open(path);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::kWeight);
  // Every message names the file first.
  CHECK_THAT(r.error().message, Contains(path + ": "));
  return r.error().message;
}

}  // namespace

TEST_CASE("a well-formed safetensors file exposes each tensor's dtype, shape, bytes and metadata",
          "[load][safetensors]") {
  TempDir dir;
  std::string path = dir.file("w.safetensors");
  std::string header =
      R"({"__metadata__":{"format":"pt"},)"
      R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]},)"
      R"("a":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]},)"
      R"("empty":{"dtype":"I64","shape":[0,3],"data_offsets":[16,16]}}   )";  // trailing spaces: padding
  std::vector<uint8_t> data = data_of(16);
  write_bytes(path, safetensors_bytes(header, data));
  auto r = load::Safetensors::open(path);
  REQUIRE(r.ok());
  REQUIRE(r->tensors().size() == 3);
  CHECK(r->tensors()[0].name == "b");  // header order
  const auto* a = r->find("a");
  REQUIRE(a != nullptr);
  CHECK(a->dtype == DType::kBf16);
  CHECK(a->shape == std::vector<uint64_t>{2, 2});
  REQUIRE(a->data.size() == 8);
  CHECK(std::equal(a->data.begin(), a->data.end(), data.begin()));
  const auto* b = r->find("b");
  REQUIRE(b != nullptr);
  CHECK(b->dtype == DType::kF32);
  CHECK(b->data.data() == a->data.data() + 8);
  CHECK(r->find("empty")->data.empty());
  CHECK(r->find("missing") == nullptr);
  CHECK(r->metadata().at("format") == "pt");
}

TEST_CASE("safetensors rejects overlapping tensors naming both", "[load][safetensors]") {
  CHECK_THAT(error_of(R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},)"
                      R"("z":{"dtype":"U8","shape":[0],"data_offsets":[2,2]},)"
                      R"("b":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}})",
                      8),
             Contains("tensor 'b' [4, 8) overlaps tensor 'a' [0, 8)"));
}

TEST_CASE("safetensors rejects data offsets outside the data section", "[load][safetensors]") {
  CHECK_THAT(error_of(R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[4,12]}})", 8),
             Contains("tensor 'a': data_offsets end 12 B beyond the data section (8 B)"));
  CHECK_THAT(error_of(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[6,4]}})", 8),
             Contains("tensor 'a': data_offsets begin 6 > end 4"));
  CHECK_THAT(error_of(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[-1,0]}})", 8),
             Contains("tensor 'a': 'data_offsets' must be two non-negative integers"));
}

TEST_CASE("safetensors rejects a byte length that does not match dtype and shape", "[load][safetensors]") {
  CHECK_THAT(error_of(R"({"w":{"dtype":"BF16","shape":[3],"data_offsets":[0,8]}})", 8),
             Contains("tensor 'w': data is 8 B but BF16 x 3 elements needs 6 B"));
  CHECK_THAT(error_of(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8),
             Contains("tensor 'w': element count overflows u64"));
}

TEST_CASE("safetensors rejects an unknown dtype naming the tensor", "[load][safetensors]") {
  CHECK_THAT(error_of(R"({"w":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}})", 8),
             Contains("tensor 'w': unsupported dtype 'C64'"));
}

TEST_CASE("safetensors errors show control bytes and ANSI escapes in names and dtypes as visible characters",
          "[load][safetensors]") {
  // "\u001b" in the JSON is a real ESC in the name; the message shows "␛".
  const std::string esc = "\xE2\x90\x9B";
  std::string m = error_of(R"({"w\u001b[31m":{"dtype":"F\u001b[0m\u0007","shape":[1],"data_offsets":[0,8]}})", 8);
  CHECK_THAT(m, Contains("tensor 'w" + esc + "[31m': unsupported dtype 'F" + esc + "[0m\xE2\x90\x87'"));
  CHECK(m.find('\x1b') == std::string::npos);
  m = error_of(R"({"a\nb":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"c":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4);
  CHECK_THAT(m, Contains("tensor 'c' [0, 4) overlaps tensor 'a\xE2\x90\x8A" "b'"));
}

TEST_CASE("safetensors rejects a header length beyond the limit or the file", "[load][safetensors]") {
  const std::string h = R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})";
  CHECK_THAT(error_of(h, 1, 100'000'001), Contains("header length 100000001 B exceeds the limit 100000000 B"));
  CHECK_THAT(error_of(h, 1, h.size() + 2), Contains("exceeds the file"));
  CHECK_THAT(error_of(h, 1, ~uint64_t{0} - 1), Contains("exceeds the limit"));
}

TEST_CASE("safetensors rejects malformed header JSON and structure", "[load][safetensors]") {
  CHECK_THAT(error_of(R"({"a":)", 0), Contains("header is not valid JSON at byte"));
  CHECK_THAT(error_of(R"([1,2])", 0), Contains("header is not a JSON object"));
  CHECK_THAT(error_of(std::string("{}\0{}", 5), 0), Contains("header contains a NUL byte"));
  CHECK_THAT(error_of(R"({} x)", 0), Contains("header is not valid JSON"));
  CHECK_THAT(error_of(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"extra":1}})", 1),
             Contains("tensor 'a': unknown field 'extra'"));
  CHECK_THAT(error_of(R"({"a":{"dtype":"U8","shape":[1.5],"data_offsets":[0,1]}})", 1),
             Contains("tensor 'a': shape has a dimension that is not a non-negative integer"));
  CHECK_THAT(error_of(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})", 2),
             Contains("tensor 'a' is listed twice"));
  CHECK_THAT(error_of(R"({"__metadata__":{"k":1}})", 0), Contains("'__metadata__' value of 'k' is not a string"));
}

TEST_CASE("safetensors rejects a file shorter than the length prefix", "[load][safetensors]") {
  TempDir dir;
  std::string path = dir.file("short.safetensors");
  write_bytes(path, std::vector<uint8_t>{1, 2, 3});
  auto r = load::Safetensors::open(path);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == path + ": not a safetensors file: 3 B is shorter than the 8-byte header length");
}

TEST_CASE("a safetensors header nested a million deep is an error naming the depth, not a stack overflow",
          "[load][safetensors]") {
  const std::string deep = "{\"a\":" + std::string(1000000, '[') + std::string(1000000, ']') + "}";
  const std::string msg = error_of(deep, 0);
  CHECK_THAT(msg, Contains(": header nests arrays/objects deeper than 128 levels (at byte 132); a safetensors header "
                           "is a flat object of tensors"));
  // Brackets inside strings do not count.
  const std::string in_string = "{\"__metadata__\":{\"k\":\"" + std::string(1000, '[') + "\"}}";
  TempDir dir;
  write_bytes(dir.file("s.safetensors"), safetensors_bytes(in_string, {}));
  CHECK(load::Safetensors::open(dir.file("s.safetensors")).ok());
}

TEST_CASE("a safetensors header that is not UTF-8 is rejected", "[load][safetensors]") {
  const std::string msg = error_of("{\"__metadata__\":{\"k\":\"\xff\xfe\"}}", 0);
  CHECK_THAT(msg, Contains("header is not valid JSON at byte") && Contains("Invalid encoding in string."));
}

TEST_CASE("a FIFO or a device as the weights file is refused at once, not waited on", "[load][safetensors]") {
  TempDir dir;
  const std::string fifo = dir.file("w.fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto r = load::Safetensors::open(fifo);  // would block in open() without O_NONBLOCK
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::kIo);
  CHECK(r.error().message == fifo + ": is a FIFO, not a regular file");
  auto zero = load::Safetensors::open("/dev/zero");
  REQUIRE_FALSE(zero.ok());
  CHECK(zero.error().message == "/dev/zero: is a character device, not a regular file");
}

TEST_CASE("weights truncated while mapped: a read is an error naming the file, exit 2, not SIGBUS",
          "[load][safetensors]") {
  TempDir dir;
  const std::string path = dir.file("w.safetensors"), err = dir.file("stderr");
  // 64 KiB of tensor data: the pages past the cut are gone after truncate(2).
  const std::string header = R"({"w":{"dtype":"BF16","shape":[32768],"data_offsets":[0,65536]}})";
  write_bytes(path, safetensors_bytes(header, data_of(65536)));
  auto r = load::Safetensors::open(path);
  REQUIRE(r.ok());
  const auto* w = r->find("w");
  REQUIRE(w != nullptr);
  const size_t offset = 40000;  // into the tensor data: pages past the cut
  REQUIRE(::truncate(path.c_str(), 4096) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(fd, STDERR_FILENO);
    volatile uint8_t sink = w->data[40000];  // the cpu device reads weights like this, in place
    (void)sink;
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));  // not killed by SIGBUS
  CHECK(WEXITSTATUS(status) == 2);
  std::ifstream f(err);
  std::string line;
  std::getline(f, line);
  const size_t header_bytes = 8 + header.size();
  CHECK(line == std::string(program_invocation_short_name) + ": error: " + path +
                    ": the file was truncated while in use (offset " + std::to_string(header_bytes + offset) +
                    " B is past its end now); stopped (replace a file in use with mv, never cp over it)");
}
