#include "kern-run/report.h"

#include <cstdio>

#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace kern::run {

namespace {

struct Speeds {
  double prefill_tok_s = 0, decode_ms_per_token = 0, decode_tok_s = 0;
};

Speeds speeds(const GenerateResult& r, size_t prompt_tokens) {
  Speeds s;
  if (r.prefill_ms > 0) s.prefill_tok_s = static_cast<double>(prompt_tokens) * 1000.0 / r.prefill_ms;
  if (r.decode_steps > 0) {
    s.decode_ms_per_token = r.decode_ms / static_cast<double>(r.decode_steps);
    if (r.decode_ms > 0) s.decode_tok_s = static_cast<double>(r.decode_steps) * 1000.0 / r.decode_ms;
  }
  return s;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

std::string render_text(const GenerateResult& r, const ReportContext& ctx) {
  Speeds s = speeds(r, ctx.prompt_ids->size());
  std::string out = "generated ids:";
  for (size_t i = 0; i < r.generated_ids.size(); ++i) out += (i ? ", " : " ") + std::to_string(r.generated_ids[i]);
  out += "\nprefill: " + std::to_string(ctx.prompt_ids->size()) + " tokens in " + fmt("%.3f", r.prefill_ms) + " ms (" +
         fmt("%.1f", s.prefill_tok_s) + " tok/s, chunk " + std::to_string(r.chunk) + ")\n";
  out += "decode: " + std::to_string(r.decode_steps) + " steps, " + fmt("%.3f", s.decode_ms_per_token) + " ms/token (" +
         fmt("%.1f", s.decode_tok_s) + " tok/s)\n";
  out += "device: " + ctx.device + "\n";
  return out;
}

std::string render_json(const GenerateResult& r, const ReportContext& ctx) {
  Speeds s = speeds(r, ctx.prompt_ids->size());
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  w.StartObject();
  w.Key("generated_ids");
  w.StartArray();
  for (int64_t id : r.generated_ids) w.Int64(id);
  w.EndArray();
  w.Key("prompt_ids");
  w.StartArray();
  for (int64_t id : *ctx.prompt_ids) w.Int64(id);
  w.EndArray();
  w.Key("prefill_ms");
  w.Double(r.prefill_ms);
  w.Key("prefill_tokens_per_s");
  w.Double(s.prefill_tok_s);
  w.Key("decode_ms_per_token");
  w.Double(s.decode_ms_per_token);
  w.Key("decode_tokens_per_s");
  w.Double(s.decode_tok_s);
  w.Key("decode_steps");
  w.Uint64(r.decode_steps);
  w.Key("chunk");
  w.Uint64(r.chunk);
  w.Key("capacity");
  w.Uint64(ctx.capacity);
  w.Key("device");
  w.String(ctx.device.c_str(), static_cast<rapidjson::SizeType>(ctx.device.size()));
  w.EndObject();
  return sb.GetString();
}

}  // namespace kern::run
