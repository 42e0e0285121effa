// Renders test/run/chat_template_cases.json with kern's Qwen3 chat template
// (render_qwen3_messages) and prints a JSON array of the rendered strings, in
// case order, for chat_template_oracle.mjs to compare with HF's template.
// usage: chat_template_render CASES.json
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "kern-run/chat_template.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: chat_template_render CASES.json\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  rapidjson::Document doc;
  doc.Parse(text.str().c_str());
  if (!in || doc.HasParseError() || !doc.IsArray()) {
    std::fprintf(stderr, "%s: not a JSON array of cases\n", argv[1]);
    return 2;
  }
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartArray();
  for (const auto& c : doc.GetArray()) {
    std::vector<kern::run::ChatMessage> messages;
    for (const auto& m : c["messages"].GetArray()) {
      kern::run::ChatMessage msg{m["role"].GetString(), m["content"].GetString(), std::nullopt};
      auto r = m.FindMember("reasoning_content");
      if (r != m.MemberEnd() && r->value.IsString()) msg.reasoning_content = r->value.GetString();
      messages.push_back(std::move(msg));
    }
    kern::run::ChatTemplateOptions o;
    if (c.HasMember("add_generation_prompt")) o.add_generation_prompt = c["add_generation_prompt"].GetBool();
    if (c.HasMember("enable_thinking")) o.enable_thinking = c["enable_thinking"].GetBool();
    auto out = kern::run::render_qwen3_messages(messages, o);
    if (!out.ok()) {
      std::fprintf(stderr, "%s: %s\n", c["name"].GetString(), out.error().message.c_str());
      return 1;
    }
    w.String(out->c_str(), static_cast<rapidjson::SizeType>(out->size()));
  }
  w.EndArray();
  std::cout << buf.GetString() << "\n";
  return 0;
}
