// Shared fixture for the manifest reader tests: one valid base manifest
// (style.md §6: base + one mutation per negative test) and helpers that
// read text and locate diagnostics.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/diagnostic.h"
#include "common/manifest.h"
#include "common/manifest_reader.h"
#include "common/source.h"

namespace kern::test {

/// A small valid manifest using every construct of the schema. Line numbers
/// are relied on by the tests: keep edits at the end of lines.
inline const std::string kBaseManifest = R"({
  "meta": {"version": 2, "model": "tiny", "spec": null},
  "symbols": {
    "tokens": {"min": 1, "max": 64},
    "pages": {"max": 8}
  },
  "states": {
    "kv": {"bytes_per_token": 1024, "align": 256},
    "ssm": {"bytes_fixed": 4096}
  },
  "buffers": {
    "x": {"dtype": "bf16", "shape": ["tokens", 128], "class": "input"},
    "w": {"dtype": "bf16", "shape": [128], "class": "weight", "domain": null},
    "y": {"dtype": "bf16", "shape": ["tokens", 128], "class": "output", "domain": {"min": -1.5, "max": {"sym": "tokens"}}},
    "ids": {"dtype": "i32", "shape": [4], "class": "input", "domain": {"index_into": "kv", "unit": 16, "monotone": true}}
  },
  "kernels": {
    "rmsnorm": {
      "params": ["in buffer<bf16>", "in buffer<bf16>", "out buffer<bf16>", "i32", "f32"],
      "impl": {
        "scratch": {"part": {"dtype": "f32", "shape": ["tokens", 4]}},
        "steps": [
          {
            "symbol": "kern_rmsnorm_bf16",
            "params": ["in buffer<bf16>", "in buffer<bf16>", "out buffer<bf16>", "i32", "f32", "inout buffer<f32>", "u8"],
            "block": [256, 1, 1],
            "grid": [{"ceil_div": [{"mul": [{"sym": "tokens"}, 4]}, 8]}, 1, 1],
            "shared_mem": 1024,
            "cubin": "rmsnorm.cubin",
            "sha256": null,
            "pdl": true,
            "args": [{"arg": 0}, {"arg": 1}, {"arg": 2}, {"arg": 3}, {"arg": 4}, {"scratch": "part", "offset": 16}, {"u8": 7}]
          }
        ]
      }
    },
    "kv_write": {
      "params": ["inout ptr", "u32", "i32", "u32", "i64", "u8"],
      "impl": {"steps": [{"symbol": "extern:kv_write", "params": ["inout ptr", "u32", "i32", "u32", "i64", "u8"], "block": [1, 1, 1], "grid": [1, 1, 1], "shared_mem": null, "cubin": null, "args": [{"arg": 0}, {"arg": 1}, {"i32": -3}, {"u32": 4000000000}, {"i64": -9000000000}, {"f32": 0.5}]}]}
    }
  },
  "programs": {
    "decode": {
      "dispatches": [
        {"kernel": "rmsnorm", "label": "final norm", "args": [{"buf": "x", "offset": 256}, {"buf": "w"}, {"buf": "y"}, {"expr": {"mul": [{"sym": "tokens"}, 32]}}, {"f32": 1e-6}]},
        {"kernel": "kv_write", "label": null, "args": [{"state": "kv", "offset": 64}, {"sym": "tokens"}, {"i32": -5}, {"u32": 7}, {"i64": -9000000000}, {"u8": 255}]}
      ]
    }
  }
}
)";

/// Replaces the only occurrence of `from` in `text` with `to`; throws when
/// `from` is absent or ambiguous (a broken test, not a reader bug).
inline std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  if (at == std::string::npos || text.find(from, at + 1) != std::string::npos) {
    throw std::logic_error("fixture: `" + from + "` must occur exactly once");
  }
  return text.replace(at, from.size(), to);
}

/// The outcome of one read: the model (when no error) and the diagnostics.
struct ReadOutcome {
  SourceFile file;
  DiagnosticEngine diags;
  std::optional<Manifest> manifest;
};

inline ReadOutcome read_text(const std::string& text) {
  ReadOutcome out{SourceFile("m.json", text), DiagnosticEngine(), std::nullopt};
  out.manifest = read_manifest(out.file, out.diags);
  return out;
}

/// "line:column" of a diagnostic's primary span.
inline std::string where(const ReadOutcome& r, const Diagnostic& d) {
  LineColumn lc = r.file.line_column(d.span.begin);
  return std::to_string(lc.line) + ":" + std::to_string(lc.column);
}

/// "CODE line:col pointer" for each diagnostic, in report order.
inline std::vector<std::string> summary(const ReadOutcome& r) {
  std::vector<std::string> out;
  for (const Diagnostic& d : r.diags.diagnostics()) out.push_back(d.code + " " + where(r, d) + " " + d.span.pointer);
  return out;
}

}  // namespace kern::test
