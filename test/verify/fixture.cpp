// The verifier test fixture: base manifest, JSON-pointer mutations, compact findings (fixture.h).
#include "fixture.h"

#include "common/json_tree.h"

#include <rapidjson/document.h>
#include <rapidjson/pointer.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "common/manifest_reader.h"
#include "common/source.h"

namespace kern::verify::testing {
namespace {

rapidjson::Document parse(const std::string& json) {
  rapidjson::Document d;
  d.Parse(json.c_str(), json.size());
  if (d.HasParseError()) throw std::runtime_error("fixture: bad JSON");
  return d;
}

std::string dump(const rapidjson::Document& d) {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  d.Accept(w);
  return sb.GetString();
}

}  // namespace

const std::string& base_manifest() {
  static const std::string text = [] {
    std::ifstream in(KERN_VERIFY_TEST_DIR "/base_manifest.json", std::ios::binary);
    if (!in) throw std::runtime_error("fixture: cannot open base_manifest.json");
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }();
  return text;
}

std::string set(const std::string& json, const std::string& pointer, const std::string& value_json) {
  rapidjson::Document d = parse(json);
  rapidjson::Document v(&d.GetAllocator());
  v.Parse(value_json.c_str(), value_json.size());
  if (v.HasParseError()) throw std::runtime_error("fixture: bad value JSON " + value_json);
  rapidjson::Pointer(pointer.c_str()).Set(d, v);
  return dump(d);
}

std::string erase(const std::string& json, const std::string& pointer) {
  rapidjson::Document d = parse(json);
  if (!rapidjson::Pointer(pointer.c_str()).Erase(d)) throw std::runtime_error("fixture: nothing at " + pointer);
  return dump(d);
}

std::string insert(const std::string& json, const std::string& pointer, size_t index, const std::string& value_json) {
  rapidjson::Document d = parse(json);
  rapidjson::Value* arr = rapidjson::Pointer(pointer.c_str()).Get(d);
  if (arr == nullptr || !arr->IsArray()) throw std::runtime_error("fixture: no array at " + pointer);
  rapidjson::Document v(&d.GetAllocator());
  v.Parse(value_json.c_str(), value_json.size());
  if (v.HasParseError()) throw std::runtime_error("fixture: bad value JSON " + value_json);
  arr->PushBack(rapidjson::Value(v, d.GetAllocator()), d.GetAllocator());
  for (size_t i = arr->Size() - 1; i > index; --i) (*arr)[i].Swap((*arr)[i - 1]);
  return dump(d);
}

Run run(const std::string& json) {
  Run r;
  SourceFile file("test.json", json);
  DiagnosticEngine diag;
  auto m = read_manifest(file, diag);
  r.read_ok = m.has_value();
  if (m) r.verified = verify(*m, diag);
  resolve_pointers(diag, file);  // verifier spans carry offsets only
  r.diags = diag.diagnostics();
  return r;
}

std::vector<std::string> findings(const Run& r) {
  std::vector<std::string> out;
  for (const Diagnostic& d : r.diags) out.push_back(d.code + " " + d.span.pointer);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> verify_findings(const std::string& json) {
  Run r = run(json);
  INFO("reader diagnostics: " << findings(r).size());
  REQUIRE(r.read_ok);
  if (!r.diags.empty()) {
    for (const Diagnostic& d : r.diags) UNSCOPED_INFO(d.code << " " << d.span.pointer << ": " << d.message);
  }
  return findings(r);
}

}  // namespace kern::verify::testing
