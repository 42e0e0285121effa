// Greedy speculative generation with a DSpark draft (SPEC §8, the caller's
// round; docs/speculative.md): chunked prefill of the first n-1 prompt
// tokens with draft_precompute after each chunk, the last prompt token
// through decode_spec (the first generated id), then rounds of
//   draft (anchor + block-1 mask rows -> block-1 drafted ids)
//   -> verify (anchor + drafted ids -> block greedy predictions)
//   -> accept the longest prefix where prediction[i] == drafted[i], plus
//      the target's own next token (prediction[accepted])
//   -> draft_precompute of the accepted rows -> next round (new anchor).
// A round whose block would cross the KV capacity falls back to plain
// decode steps for the rest. Output equals plain greedy decoding token for
// token (lossless) on the cpu device.
#pragma once

#include "common/result.h"
#include "kern-load/executable.h"
#include "kern-run/generate.h"
#include "kern-run/qwen3_contract.h"
#include "kern-run/spec_contract.h"

namespace kern::run {

/// Generates for `r` (checked as generate() checks it) with the speculative
/// programs of `s`; the result's `spec` holds the rounds. Errors as
/// generate(), with "draft round at position P" / "verify at position P" as
/// context; a drafted or predicted id outside [0, vocab) is an error (kDevice).
Result<GenerateResult> generate_spec(load::Executable& exe, const Qwen3Contract& c, const SpecContract& s,
                                     const GenerateRequest& r);

}  // namespace kern::run
