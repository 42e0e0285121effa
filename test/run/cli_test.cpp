// The kern-run command on the tiny model (cpu device): its JSON report,
// --dump-buffer, and each error case's exit code and message. Runs the
// built binary (KERN_RUN) as a subprocess.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "kern-load/device_select.h"
#include "kern-run/cli_checks.h"
#include "kern-run/cli_options.h"
#include "rapidjson/document.h"
#include "test/load/plan_builder.h"
#include "test/load/test_files.h"
#include "test/run/cli_runner.h"

using namespace kern;
using namespace kern::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

TEST_CASE("kern-run --json prints exactly one JSON object with the report fields", "[run][cli]") {
  CliResult r = kern_run(tiny_cpu_args("--prompt-ids 3,17,99,200,5 --steps 6 --chunk 2 --json"));
  INFO(r.err);
  REQUIRE(r.rc == 0);
  rapidjson::Document doc;
  doc.Parse(r.out.c_str());  // trailing newline only: anything else is a parse error
  REQUIRE_FALSE(doc.HasParseError());
  REQUIRE(doc.IsObject());
  REQUIRE(doc["generated_ids"].IsArray());
  CHECK(doc["generated_ids"].Size() == 6);
  REQUIRE(doc["prompt_ids"].IsArray());
  CHECK(doc["prompt_ids"].Size() == 5);
  CHECK(doc["prompt_ids"][3].GetInt64() == 200);
  for (const char* key : {"prefill_ms", "decode_ms_per_token", "decode_tokens_per_s", "prefill_tokens_per_s"})
    CHECK(doc[key].IsNumber());
  CHECK(std::string(doc["device"].GetString()) == "cpu");
  CHECK(doc["chunk"].GetUint64() == 2);
  CHECK(doc["capacity"].GetUint64() == 1024);
  CHECK(std::string(doc["stop_reason"].GetString()) == "steps");
  CHECK(doc["time_to_first_token_ms"].GetDouble() > 0);
  CHECK_FALSE(doc.HasMember("text"));  // no tokenizer, no text
  // Load time by phase; the cpu device reads every weight byte in place.
  REQUIRE(doc["load_ms"].IsObject());
  for (const char* key :
       {"plan", "device", "weights_open", "kernels", "allocate", "weights_upload", "stage", "pack", "total"})
    CHECK(doc["load_ms"][key].IsNumber());
  CHECK(doc["load_ms"]["total"].GetDouble() >= doc["load_ms"]["weights_upload"].GetDouble());
  CHECK(doc["weight_bytes"].GetUint64() == 0);  // nothing copied
  CHECK(doc["weight_bytes_in_place"].GetUint64() > 250000);  // examples/tiny-qwen3.safetensors holds ~281 kB of tensors
}

TEST_CASE("kern-run --json reports the decode loop's steady state: 0 host writes and waits asynchronously",
          "[run][cli][decode_loop]") {
  auto run_json = [](const std::string& extra) {
    CliResult r = kern_run(tiny_cpu_args("--prompt-ids 3,17,99,200,5 --steps 8 --chunk 2 --json" + extra));
    INFO(r.err);
    REQUIRE(r.rc == 0);
    rapidjson::Document doc;
    doc.Parse(r.out.c_str());
    REQUIRE_FALSE(doc.HasParseError());
    return doc;
  };
  rapidjson::Document async = run_json("");
  CHECK(std::string(async["decode_mode"].GetString()) == "async");
  CHECK(async["decode_lookahead"].GetUint64() == 2);
  CHECK(async["decode_surplus_steps"].GetUint64() == 0);
  // 8 ids: prefill_last's and 7 decode steps - 2 warm-up - 1 drain
  CHECK(async["decode_steady_steps"].GetUint64() == 4);
  CHECK(async["decode_host_writes_per_step"].GetDouble() == 0);
  CHECK(async["decode_host_waits_per_step"].GetDouble() == 0);
  CHECK(async["decode_launches_per_step"].GetDouble() == 14);  // the tiny fused decode: 1 + 2 x 5 + 1 + sample + advance, eager on cpu
  for (const char* key : {"decode_gpu_busy_ms_per_step", "decode_gpu_wall_ms_per_step", "decode_host_gap_us_per_step",
                          "decode_host_gap_us_max"})
    CHECK(async[key].IsNull());  // no timers on cpu
  rapidjson::Document sync = run_json(" --sync");
  CHECK(std::string(sync["decode_mode"].GetString()) == "sync");
  CHECK(sync["decode_host_writes_per_step"].GetDouble() == 4);
  CHECK(sync["decode_host_waits_per_step"].GetDouble() == 1);
  CHECK(sync["generated_ids"] == async["generated_ids"]);
  rapidjson::Document short_run = [] {
    CliResult r = kern_run(tiny_cpu_args("--prompt-ids 3 --steps 1 --json"));
    REQUIRE(r.rc == 0);
    rapidjson::Document doc;
    doc.Parse(r.out.c_str());
    return doc;
  }();
  CHECK(short_run["decode_steady_steps"].GetUint64() == 0);
  CHECK(short_run["decode_host_writes_per_step"].IsNull());
}

TEST_CASE("kern-run without a prompt option or --tokenizer says what it needs", "[run][cli]") {
  CliResult r = kern_run(tiny_cpu_args("--steps 1"));
  CHECK(r.rc == 2);
  CHECK(r.err ==
        "kern-run: error: no prompt: give token ids (--prompt-ids 1,2,3) or text (--prompt TEXT, --prompt-file FILE "
        "or stdin) with the model's --tokenizer tokenizer.json\n");
  CliResult text = kern_run(tiny_cpu_args("--steps 1 --prompt hi"));
  CHECK(text.rc == 2);
  CHECK(text.err == "kern-run: error: --prompt needs --tokenizer tokenizer.json (the model's Hugging Face tokenizer) "
                    "to turn text into ids; or give ids with --prompt-ids\n");
  CliResult file = kern_run(tiny_cpu_args("--steps 1 --prompt-file -"));
  CHECK(file.rc == 2);
  CHECK(file.err == "kern-run: error: --prompt-file needs --tokenizer tokenizer.json (the model's Hugging Face "
                    "tokenizer) to turn text into ids; or give ids with --prompt-ids\n");
  CliResult two = kern_run(tiny_cpu_args("--steps 1 --prompt-ids 1 --prompt hi"));
  CHECK(two.rc == 2);
  CHECK_THAT(two.err, Contains("excludes"));
  CliResult chat = kern_run(tiny_cpu_args("--steps 1 --prompt-ids 1 --chat"));
  CHECK(chat.rc == 2);
  CHECK_THAT(chat.err, Contains("--chat needs a text prompt"));
}

TEST_CASE("kern-run prints the ids and speeds as text without --json, and runs are reproducible", "[run][cli]") {
  CliResult a = kern_run(tiny_cpu_args("--prompt-ids 1,2,3,4 --steps 4"));
  CliResult b = kern_run(tiny_cpu_args("--prompt-ids 1,2,3,4 --steps 4 --chunk 1"));
  REQUIRE(a.rc == 0);
  REQUIRE(b.rc == 0);
  CHECK_THAT(a.out, StartsWith("generated ids: "));
  CHECK_THAT(a.out, Contains("tok/s") && Contains("ms/token") && Contains("device: cpu"));
  CHECK_THAT(a.out, Contains("time to first token") && Contains("load: "));
  // The cpu device copies no weight: the load line says they are read in place (issue 25),
  // then how long packing the decode GEMVs' w took (docs/kernels.md "Session 6"),
  // a phase --no-gemv-pack leaves out.
  const auto load_line_of = [](const std::string& out) {
    const size_t load_at = out.find("\nload: ");
    REQUIRE(load_at != std::string::npos);
    return out.substr(load_at + 1, out.find('\n', load_at + 1) - load_at - 1);
  };
  const std::string phases = "load: [0-9.]+ ms \\(plan [0-9.]+, device [0-9.]+, kernels [0-9.]+, allocate [0-9.]+, "
                             "weights [0-9.]+ ms \\(0\\.3 MB read in place, not copied\\), stage [0-9.]+";
  CHECK_THAT(load_line_of(a.out), Catch::Matchers::Matches(phases + ", decode GEMV weights packed [0-9.]+ ms\\)"));
  CHECK_THAT(a.out, Contains(", packed decode GEMV weights "));
  CliResult unpacked = kern_run(tiny_cpu_args("--prompt-ids 1,2,3,4 --steps 4 --no-gemv-pack"));
  REQUIRE(unpacked.rc == 0);
  CHECK_THAT(load_line_of(unpacked.out), Catch::Matchers::Matches(phases + "\\)"));
  CHECK_THAT(unpacked.out, !Contains("packed decode GEMV weights"));
  // The same ids read packed or as stored.
  CHECK(a.out.substr(0, a.out.find('\n')) == unpacked.out.substr(0, unpacked.out.find('\n')));
  CHECK_THAT(a.out, Contains(" MB before planning, ") && !Contains("unplanned"));
  CHECK(a.out.substr(0, a.out.find('\n')) == b.out.substr(0, b.out.find('\n')));
}

TEST_CASE("kern-run --dump-buffer writes the buffer's bytes at its last use", "[run][cli]") {
  TempDir dir;
  // Each --dump-buffer takes one value, even before the plan positional.
  CliResult r = kern_run("--dump-buffer next_token=" + dir.file("next.bin") + " " +
                         tiny_cpu_args("--prompt-ids 5,6,7 --steps 2 --dump-buffer logits=" + dir.file("logits.bin")));
  INFO(r.err);
  REQUIRE(r.rc == 0);
  // logits is [8, vocab] bf16 (the most rows lm_head_argmax takes); decode wrote row 0.
  CHECK(slurp(dir.file("logits.bin")).size() == 8 * 256 * 2);
  std::string next = slurp(dir.file("next.bin"));
  REQUIRE(next.size() == 8);
  int64_t id = 0;
  std::memcpy(&id, next.data(), 8);
  std::string last_id = std::to_string(id);
  std::string first_line = r.out.substr(0, r.out.find('\n'));
  CHECK(first_line.substr(first_line.size() - last_id.size()) == last_id);
}

TEST_CASE("kern-run reports a missing weights or plan file as an I/O error, exit code 2", "[run][cli]") {
  CliResult r = kern_run(env_path("KERN_TINY_PLAN") + " --weights /nonexistent/w.safetensors --device cpu "
                         "--prompt-ids 1 --steps 1");
  CHECK(r.rc == 2);
  CHECK(r.err == "kern-run: error: /nonexistent/w.safetensors: cannot open: No such file or directory\n");
  CHECK(r.out.empty());
  CliResult p = kern_run("/nonexistent/p.kplan --weights " + env_path("KERN_TINY_WEIGHTS") +
                         " --device cpu --prompt-ids 1 --steps 1");
  CHECK(p.rc == 2);
  CHECK(p.err == "kern-run: error: /nonexistent/p.kplan: cannot open: No such file or directory\n");
}

TEST_CASE("kern-run reports a weights file lacking a plan weight naming the weight", "[run][cli]") {
  TempDir dir;
  std::vector<uint8_t> one(4);
  write_bytes(dir.file("w.safetensors"),
              safetensors_bytes(R"({"k_scale":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", one));
  CliResult r = kern_run(env_path("KERN_TINY_PLAN") + " --weights " + dir.file("w.safetensors") +
                         " --device cpu --prompt-ids 1 --steps 1");
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, StartsWith("kern-run: error: " + dir.file("w.safetensors") + ": weight '") &&
                        Contains("' is missing"));
}

TEST_CASE("kern-run given a Hugging Face checkpoint's weights says to export them first", "[run][cli][next-step]") {
  // A HF Qwen3 checkpoint keeps q_proj, k_proj and v_proj apart; the plan binds the merged qkv_proj (issue 25).
  TempDir dir;
  std::vector<uint8_t> data(8);
  write_bytes(dir.file("model.safetensors"),
              safetensors_bytes(R"({"model.layers.0.self_attn.q_proj.weight":{"dtype":"BF16","shape":[2,2],)"
                                R"("data_offsets":[0,8]}})",
                                data));
  CliResult r = kern_run(env_path("KERN_TINY_PLAN") + " --weights " + dir.file("model.safetensors") +
                         " --device cpu --prompt-ids 1 --steps 1");
  CHECK(r.rc == 1);
  CHECK(r.err == "kern-run: error: " + dir.file("model.safetensors") +
                     ": weight 'model.embed_tokens.weight' is missing (the plan's buffer of class weight has no tensor "
                     "of that name); it is a Hugging Face checkpoint (q_proj, k_proj, v_proj apart): export it to the "
                     "plan's layout first: examples/export_qwen3.py CKPT_DIR -o W.safetensors (docs/running.md)\n");
}

TEST_CASE("kern-run given the target's weights for a speculative plan points to the draft export",
          "[run][cli][next-step]") {
  TempDir dir;
  const std::string verify = env_path("KERN_VERIFY") + " " + std::string(KERN_SOURCE_ROOT) +
                             "/examples/tiny-qwen3-dspark.json -o " + dir.file("spec.kplan") + " >/dev/null 2>&1";
  REQUIRE(std::system(verify.c_str()) == 0);
  CliResult r = kern_run(dir.file("spec.kplan") + " --weights " + env_path("KERN_TINY_WEIGHTS") +
                         " --device cpu --prompt-ids 1 --steps 1");
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, StartsWith("kern-run: error: " + env_path("KERN_TINY_WEIGHTS") + ": weight 'draft."));
  CHECK_THAT(r.err, Catch::Matchers::EndsWith(
                        "' is missing (the plan's buffer of class weight has no tensor of that name); the file has the "
                        "target's weights but none of the 22 draft weights ('draft.…') a speculative plan binds: "
                        "export the target and the draft into one file: examples/export_qwen3.py CKPT_DIR --draft "
                        "DRAFT_DIR --draft-config D.json -o W.safetensors, or --random-weights SEED "
                        "(docs/speculative.md)\n"));
}

TEST_CASE("kern-run given a manifest or a weights file as the plan says what to run", "[run][cli][next-step]") {
  const std::string manifest = std::string(KERN_SOURCE_ROOT) + "/examples/tiny-qwen3.json";
  CliResult r = kern_run(manifest + " --weights " + env_path("KERN_TINY_WEIGHTS") + " --device cpu --prompt-ids 1");
  CHECK(r.rc == 1);
  CHECK(r.err == "kern-run: error: " + manifest + ": not a kplan file: file identifier '\"met', expected 'KPLN'; "
                     "the file is JSON (a manifest?): compile it into a plan first: kern-verify " + manifest + " -o " +
                     manifest.substr(0, manifest.size() - 5) + ".kplan\n");
  CliResult w = kern_run(env_path("KERN_TINY_WEIGHTS") + " --weights " + env_path("KERN_TINY_WEIGHTS") +
                         " --device cpu --prompt-ids 1");
  CHECK(w.rc == 1);
  CHECK_THAT(w.err, Catch::Matchers::EndsWith("; the file is a safetensors file (weights): give the plan "
                                              "(kern-verify -o) first and this file with --weights\n"));
}

TEST_CASE("kern-run rejects a prompt longer than the capacity with exit code 2", "[run][cli]") {
  CliResult r = kern_run(tiny_cpu_args("--prompt-ids 1,2,3,4,5,6,7,8 --steps 3 --capacity 10"));
  CHECK(r.rc == 2);
  // The engine's message names no flag; kern-run adds which to change (issue 25).
  CHECK(r.err == "kern-run: error: prompt (8 tokens) + steps (3) = 11 tokens exceeds the capacity 10 tokens; raise "
                 "--capacity (this plan holds up to 1024 tokens) or lower --steps\n");
}

TEST_CASE("kern-run says to shorten a prompt longer than the plan's largest capacity", "[run][cli]") {
  std::string ids = "1";
  for (int i = 1; i < 1030; ++i) ids += ",1";
  CliResult r = kern_run(tiny_cpu_args("--prompt-ids " + ids + " --steps 1 --capacity 1024"));
  CHECK(r.rc == 2);
  CHECK(r.err == "kern-run: error: prompt (1030 tokens) + steps (1) = 1031 tokens exceeds the capacity 1024 tokens; "
                 "this plan holds at most 1024 tokens: shorten the prompt\n");
}

TEST_CASE("kern-run rejects a capacity beyond the block table", "[run][cli]") {
  CliResult r = kern_run(tiny_cpu_args("--prompt-ids 1 --steps 1 --capacity 2000"));
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Contains("capacity 2000 tokens exceeds the block table (64 pages x 16 = 1024 tokens)"));
}

TEST_CASE("kern-run rejects a token id outside the vocabulary and an empty prompt", "[run][cli]") {
  CliResult r = kern_run(tiny_cpu_args("--prompt-ids 1,256 --steps 1"));
  CHECK(r.rc == 2);
  CHECK(r.err == "kern-run: error: prompt id 256 at index 1 is outside the vocabulary [0, 256) (the embedding's rows)\n");
  CliResult e = kern_run(tiny_cpu_args("--prompt-ids '' --steps 1"));
  CHECK(e.rc == 2);
  CHECK_THAT(e.err, Contains("the prompt is empty"));
  CliResult x = kern_run(tiny_cpu_args("--prompt-ids 1,x --steps 1"));
  CHECK(x.rc == 2);
  CHECK(x.err == "kern-run: error: --prompt-ids: 'x' is not an integer token id\n");
}

TEST_CASE("kern-run rejects --stop-ids outside the vocabulary (issue 22 item 16)", "[run][cli]") {
  for (const char* bad : {"-1", "256", "99999999999"}) {
    INFO("--stop-ids " << bad);
    CliResult r = kern_run(tiny_cpu_args(std::string("--prompt-ids 1,2 --steps 2 --stop-ids 5,") + bad));
    CHECK(r.rc == 2);
    CHECK(r.err == std::string("kern-run: error: --stop-ids: stop id ") + bad +
                       " at index 1 is outside the vocabulary [0, 256)\n");
    CHECK(r.out.empty());
  }
  CliResult ok = kern_run(tiny_cpu_args("--prompt-ids 1,2 --steps 2 --stop-ids 0,255"));
  CHECK(ok.rc == 0);
}

TEST_CASE("kern-run bounds the capacity by the RoPE table: max_position_embeddings 17 (issue 22 item 3)",
          "[run][cli]") {
  const std::string base = env_path("KERN_ROPE17_PLAN") + " --random-weights 1 --device cpu --prompt-ids 1,2";
  // The default capacity is 17 (not the block table's 32): 2 + 15 fits, 2 + 16 does not.
  CliResult fits = kern_run(base + " --steps 15 --json");
  CHECK(fits.rc == 0);
  CHECK_THAT(fits.out, Contains("\"capacity\":17"));
  CliResult past = kern_run(base + " --steps 16");
  CHECK(past.rc == 2);
  CHECK(past.err == "kern-run: error: prompt (2 tokens) + steps (16) = 18 tokens exceeds the capacity 17 tokens; "
                    "this plan holds at most 17 tokens: lower --steps to at most 15\n");
  CliResult big = kern_run(base + " --steps 1 --capacity 32");
  CHECK(big.rc == 2);
  CHECK(big.err == "kern-run: error: --capacity: capacity 32 tokens exceeds the RoPE table (17 positions: "
                   "rope.cos_sin_cache rows, the model's max_position_embeddings)\n");
}

TEST_CASE("kern-run rejects an unknown --device", "[run][cli]") {
  CliResult r = kern_run(env_path("KERN_TINY_PLAN") + " --weights " + env_path("KERN_TINY_WEIGHTS") +
                         " --device gpu --prompt-ids 1 --steps 1");
  CHECK(r.rc == 2);
  CHECK(r.err == "kern-run: error: --device: unknown device 'gpu' (expected auto, cpu or cuda)\n");
}

TEST_CASE("kern-run --device cuda without a CUDA driver says so", "[run][cli]") {
  auto probe = load::probe_cuda_devices();
  if (probe.ok()) {
    WARN("a CUDA driver is present: this case checks the driver-less path only");
    return;
  }
  CliResult r = kern_run(env_path("KERN_TINY_PLAN") + " --weights " + env_path("KERN_TINY_WEIGHTS") +
                         " --device cuda --prompt-ids 1 --steps 1");
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, StartsWith("kern-run: error: no CUDA driver: dlopen libcuda.so.1 failed: "));
  // auto falls back to the cpu device and says so on stderr.
  CliResult a = kern_run(env_path("KERN_TINY_PLAN") + " --weights " + env_path("KERN_TINY_WEIGHTS") +
                         " --prompt-ids 1 --steps 1 --json");
  CHECK(a.rc == 0);
  CHECK(a.err == "kern-run: warning: no CUDA driver; using the cpu reference device (--device cpu skips this note)\n");
  CHECK_THAT(a.out, Contains("\"device\":\"cpu\""));
}

TEST_CASE("kern-run rejects a --dump-buffer naming no buffer before running", "[run][cli]") {
  CliResult r = kern_run(tiny_cpu_args("--prompt-ids 1 --steps 1 --dump-buffer nope=/tmp/x.bin"));
  CHECK(r.rc == 2);
  CHECK(r.err == "kern-run: error: --dump-buffer: the plan has no buffer 'nope'\n");
  CliResult f = kern_run(tiny_cpu_args("--prompt-ids 1 --steps 1 --dump-buffer logits"));
  CHECK(f.rc == 2);
  CHECK(f.err == "kern-run: error: --dump-buffer 'logits': expected NAME=FILE\n");
}

TEST_CASE("kern-run rejects a file that is not a plan", "[run][cli]") {
  TempDir dir;
  write_bytes(dir.file("bad.kplan"), std::vector<uint8_t>(64, 'z'));
  CliResult r = kern_run(dir.file("bad.kplan") + " --weights " + env_path("KERN_TINY_WEIGHTS") +
                         " --device cpu --prompt-ids 1 --steps 1");
  CHECK(r.rc == 1);
  CHECK(r.err == "kern-run: error: " + dir.file("bad.kplan") +
                     ": not a kplan file: file identifier 'zzzz', expected 'KPLN'\n");
}

TEST_CASE("kern-run rejects a valid plan without the causal-LM contract", "[run][cli]") {
  TempDir dir;
  write_bytes(dir.file("tiny.kplan"), serialize(tiny_plan()));  // program `main` only
  CliResult r = kern_run(dir.file("tiny.kplan") + " --weights " + env_path("KERN_TINY_WEIGHTS") +
                         " --device cpu --prompt-ids 1 --steps 1");
  CHECK(r.rc == 1);
  CHECK(r.err == "kern-run: error: " + dir.file("tiny.kplan") +
                     ": the plan has no program 'prefill' (the causal-LM caller contract, docs/causal-lm-manifest.md)\n");
}

TEST_CASE("kern-run rejects negative values of unsigned options instead of wrapping them", "[run][cli]") {
  for (const char* option : {"--steps", "--chunk", "--capacity", "--random-weights"}) {
    INFO(option);
    CliResult r = kern_run(env_path("KERN_TINY_PLAN") + " --device cpu --prompt-ids 1 " + option + " -1" +
                           (std::string(option) == "--random-weights" ? "" : " --weights " + env_path("KERN_TINY_WEIGHTS")));
    CHECK(r.rc == 2);
    CHECK_THAT(r.err,
               StartsWith("kern-run: error: " + std::string(option) + ": -1 is negative: expected a whole number >= "));
    CHECK(r.out.empty());
  }
  CliResult zero = kern_run(tiny_cpu_args("--prompt-ids 1 --chunk 0"));
  CHECK(zero.rc == 2);
  CHECK_THAT(zero.err, StartsWith("kern-run: error: --chunk: 0 is out of range: expected a whole number >= 1\n"));
  CliResult text = kern_run(tiny_cpu_args("--prompt-ids 1 --steps ten"));
  CHECK(text.rc == 2);
  CHECK_THAT(text.err,
             StartsWith("kern-run: error: --steps: 'ten' is not a whole number: expected a whole number >= 1\n"));
}

TEST_CASE("kern-run rejects --steps near 2^64 as exceeding the capacity", "[run][cli]") {
  for (const char* steps : {"18446744073709551612", "18446744073709551615"}) {
    CliResult r = kern_run(tiny_cpu_args("--prompt-ids 1,2,3,4,5 --steps ") + steps);
    CHECK(r.rc == 2);
    CHECK(r.err == std::string("kern-run: error: prompt (5 tokens) + steps (") + steps +
                       ") exceeds the capacity 1024 tokens; this plan holds at most 1024 tokens: lower --steps to "
                       "at most 1019\n");
  }
  CliResult over = kern_run(tiny_cpu_args("--prompt-ids 1 --steps 18446744073709551616"));
  CHECK(over.rc == 2);
  CHECK_THAT(over.err, StartsWith("kern-run: error: --steps: 18446744073709551616 is out of range"));
}

TEST_CASE("kern-run --prompt-ids takes 1,2,3 or [1,2,3] and rejects malformed lists", "[run][cli]") {
  CliResult ok = kern_run(tiny_cpu_args("--prompt-ids '[3, 17,99]' --steps 2 --json"));
  CHECK(ok.rc == 0);
  CHECK_THAT(ok.out, Contains("\"prompt_ids\":[3,17,99]"));
  CliResult big = kern_run(tiny_cpu_args("--prompt-ids 99999999999999999999 --steps 1"));
  CHECK(big.rc == 2);
  CHECK(big.err == "kern-run: error: --prompt-ids: 99999999999999999999 is out of range for a token id (at index 0)\n");
  CliResult open = kern_run(tiny_cpu_args("--prompt-ids '[1,2' --steps 1"));
  CHECK(open.rc == 2);
  CHECK(open.err == "kern-run: error: --prompt-ids: '[' without a closing ']'\n");
  CliResult empty = kern_run(tiny_cpu_args("--prompt-ids 1,,3 --steps 1"));
  CHECK(empty.rc == 2);
  CHECK(empty.err == "kern-run: error: --prompt-ids: empty item at index 1 (two commas, or a comma at an end)\n");
}

TEST_CASE("an unwritable --dump-buffer destination is an I/O error before anything runs", "[run][cli]") {
  TempDir dir;
  CliResult r = kern_run(tiny_cpu_args("--prompt-ids 1 --steps 1 --dump-buffer logits=/nonexistent/x.bin -v"));
  CHECK(r.rc == 2);
  CHECK(r.err == "kern-run: error: --dump-buffer logits: /nonexistent/x.bin: cannot write there: /nonexistent: "
                 "No such file or directory\n");
  CHECK(r.out.empty());  // nothing was generated
  std::string sub = dir.file("sub");
  REQUIRE(::mkdir(sub.c_str(), 0700) == 0);
  CliResult d = kern_run(tiny_cpu_args("--prompt-ids 1 --steps 1 --dump-buffer logits=" + sub));
  CHECK(d.rc == 2);
  CHECK(d.err == "kern-run: error: --dump-buffer logits: " + sub + ": is a directory, not a file\n");
}

TEST_CASE("kern-run --dump-buffer into a FIFO writes into it instead of replacing it", "[run][cli]") {
  TempDir dir;
  std::string fifo = dir.file("logits.fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // The test holds the reader end open before kern-run starts (no race with
  // a background reader on a loaded machine); the 4096 bytes fit the pipe.
  int rd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  REQUIRE(rd >= 0);
  std::string cmd = env_path("KERN_RUN") + " " + tiny_cpu_args("--prompt-ids 1,2 --steps 1 --dump-buffer logits=" + fifo) +
                    " </dev/null >" + dir.file("out") + " 2>" + dir.file("err");
  int status = std::system(cmd.c_str());
  INFO(slurp(dir.file("err")));
  std::string got;
  char chunk[8192];
  for (ssize_t n; (n = ::read(rd, chunk, sizeof chunk)) > 0;) got.append(chunk, static_cast<size_t>(n));
  ::close(rd);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  struct stat st {};
  REQUIRE(::lstat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
  CHECK(got.size() == 8 * 256 * 2);  // logits [8, vocab] bf16
}

TEST_CASE("a failed write to stdout is an I/O error, not exit 0", "[run][cli]") {
  // Shell redirection to /dev/full opens the device; it is never replaced.
  for (const char* extra : {"", " --json"}) {
    INFO(extra);
    std::string cmd = env_path("KERN_RUN") + " " + tiny_cpu_args(std::string("--prompt-ids 1 --steps 3") + extra) +
                      " </dev/null >/dev/full 2>/dev/null";
    int status = std::system(cmd.c_str());
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 2);
  }
  TempDir dir;
  std::string cmd = env_path("KERN_RUN") + " " + tiny_cpu_args("--prompt-ids 1 --steps 3") + " </dev/null >/dev/full 2>" +
                    dir.file("err");
  REQUIRE(std::system(cmd.c_str()) != 0);
  CHECK(slurp(dir.file("err")) == "kern-run: error: stdout: write error: No space left on device\n");
}

TEST_CASE("parse_id_list accepts plain and bracketed lists and names each malformed item", "[run][cli][ids]") {
  using kern::run::parse_id_list;
  CHECK(parse_id_list("1,2,3").value() == std::vector<int64_t>{1, 2, 3});
  CHECK(parse_id_list(" [ 1 , -2,+3 ]\n").value() == std::vector<int64_t>{1, -2, 3});
  CHECK(parse_id_list("[]").value().empty());
  CHECK(parse_id_list("").value().empty());
  auto err = [](const std::string& text) {
    auto r = parse_id_list(text, "--ids");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::kUsage);
    return r.error().message;
  };
  CHECK(err("[1,2") == "--ids: '[' without a closing ']'");
  CHECK(err("[") == "--ids: '[' without a closing ']'");
  CHECK(err("1,2]") == "--ids: unexpected ']': give ids as 1,2,3 or [1,2,3]");
  CHECK(err("[[1]]") == "--ids: unexpected '[': give ids as 1,2,3 or [1,2,3]");
  CHECK(err(",1") == "--ids: empty item at index 0 (two commas, or a comma at an end)");
  CHECK(err("1 2") == "--ids: '1 2' is not an integer token id");
  CHECK(err("+-1") == "--ids: '+-1' is not an integer token id");
  CHECK(err("-99999999999999999999") == "--ids: -99999999999999999999 is out of range for a token id (at index 0)");
  CHECK(err(std::string("1,\x7f\x80", 4)) == "--ids: '\\x7f\\x80' is not an integer token id");
  CHECK(err(std::string(60, '9') + "x") == "--ids: '" + std::string(40, '9') + "...' is not an integer token id");
  auto len = parse_id_list("8,x", "-p", "prompt length");
  REQUIRE_FALSE(len.ok());
  CHECK(len.error().message == "-p: 'x' is not an integer prompt length");
}

TEST_CASE("count_error accepts whole numbers in range and explains the rest", "[run][cli][ids]") {
  using kern::run::count_error;
  CHECK(count_error("0", 0).empty());
  CHECK(count_error("+7", 1, 10).empty());
  CHECK(count_error("18446744073709551615", 1).empty());
  CHECK(count_error("-1", 1) == "-1 is negative: expected a whole number >= 1");
  CHECK(count_error("-0.5", 0) == "-0.5 is negative: expected a whole number >= 0");
  CHECK(count_error("0", 1, 1000000) == "0 is out of range: expected a whole number from 1 to 1000000");
  CHECK(count_error("18446744073709551616", 1) == "18446744073709551616 is out of range: expected a whole number >= 1");
  CHECK(count_error("1e3", 1) == "'1e3' is not a whole number: expected a whole number >= 1");
  CHECK(count_error("", 1) == "'' is not a whole number: expected a whole number >= 1");
}

TEST_CASE("a manifest kern-verify accepts whose embedding width lies is an extent error on the cpu device, not a crash",
          "[run][cli][extents]") {
  // examples/tiny-qwen3.json with the embedding dispatch's hidden = 64
  // literal changed to 1000000: the declarations still type-check, but the
  // launch would read rows of 1000000 bf16 from a [256, 64] table (and
  // write them into the 64-wide residual).
  std::string manifest = slurp(std::string(KERN_SOURCE_ROOT) + "/examples/tiny-qwen3.json");
  const std::string dispatch =
      R"("args": [{"buf": "token_ids"}, {"buf": "model.embed_tokens.weight"}, {"buf": "residual"}, {"sym": "tokens"}, {"i32": 64}, {"i32": 256}])";
  // In prefill and prefill_last (the prompt's one chunk runs the latter).
  size_t at = manifest.find(dispatch);
  REQUIRE(at != std::string::npos);
  for (; at != std::string::npos; at = manifest.find(dispatch, at + 1))
    manifest.replace(at + dispatch.find("{\"i32\": 64}"), std::strlen("{\"i32\": 64}"), "{\"i32\": 1000000}");
  TempDir dir;
  write_bytes(dir.file("lying.json"), std::vector<uint8_t>(manifest.begin(), manifest.end()));
  const std::string verify = env_path("KERN_VERIFY") + " " + dir.file("lying.json") + " -o " + dir.file("lying.kplan") +
                             " >/dev/null 2>&1";
  REQUIRE(std::system(verify.c_str()) == 0);  // the verifier cannot know what `hidden` means
  CliResult r = kern_run(dir.file("lying.kplan") + " --weights " + env_path("KERN_TINY_WEIGHTS") +
                         " --device cpu --prompt-ids 1,2 --steps 1");
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Contains("dispatch 0") && Contains("step 'kern_embedding_bf16'") &&
                        Contains("param 1 (table) may touch 512000000 B from offset 0 of buffer "
                                 "'model.embed_tokens.weight' (32768 B)"));
}

TEST_CASE("ids are unchanged with and without memory planning and with --poison-workspace on every test prompt",
          "[run][cli][arena]") {
  // The test prompts: one token (decode only), short, chunked prefill, and a
  // long one whose prefill chunks differ in length.
  const std::vector<std::string> prompts = {"7", "3,17,99,200,5", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21",
                                            "250,1,0,255,128,64,32,16,8,4,2,1,3,5,7,9,11,13,15,17,19,23,29,31,37,41"};
  for (const std::string& prompt : prompts) {
    const std::string args = " --weights " + env_path("KERN_TINY_WEIGHTS") + " --device cpu --prompt-ids " + prompt +
                             " --steps 8 --chunk 8";
    std::string reference;
    for (const char* plan : {"KERN_TINY_PLAN", "KERN_TINY_PLAN_UNPLANNED"}) {
      for (const char* poison : {"", " --poison-workspace"}) {
        CliResult r = kern_run(env_path(plan) + args + poison);
        INFO(prompt << " " << plan << poison << ": " << r.err);
        REQUIRE(r.rc == 0);
        std::string ids = r.out.substr(0, r.out.find('\n'));
        if (reference.empty()) reference = ids;
        CHECK(ids == reference);
      }
    }
  }
}

TEST_CASE("kern-run --json reports memory by class and the arena before and after planning", "[run][cli][arena]") {
  auto memory_of = [](const std::string& plan_env) {
    CliResult r = kern_run(env_path(plan_env.c_str()) + " --weights " + env_path("KERN_TINY_WEIGHTS") +
                           " --device cpu --prompt-ids 1,2,3 --steps 2 --json");
    INFO(r.err);
    REQUIRE(r.rc == 0);
    rapidjson::Document doc;
    doc.Parse(r.out.c_str());
    REQUIRE(doc.IsObject());
    REQUIRE(doc.HasMember("memory"));
    rapidjson::Document m;
    m.CopyFrom(doc["memory"], m.GetAllocator());
    return m;
  };
  rapidjson::Document planned = memory_of("KERN_TINY_PLAN");
  rapidjson::Document unplanned = memory_of("KERN_TINY_PLAN_UNPLANNED");
  CHECK(planned["arena_planned"].GetBool());
  CHECK_FALSE(unplanned["arena_planned"].GetBool());
  CHECK(planned["arena"].GetUint64() < unplanned["arena"].GetUint64());
  CHECK(planned["arena_unplanned"].GetUint64() == unplanned["arena"].GetUint64());
  CHECK(planned["arena"].GetUint64() >= planned["arena_peak_live"].GetUint64());
  CHECK(planned["weights"].GetUint64() > 0);
  CHECK(planned["weights_in_place"].GetUint64() == planned["weights"].GetUint64());  // cpu: read from the file
  // The decode GEMVs' w (every layer's projections and the lm_head, which the
  // tiny model ties to the embedding) packed once at load; not in "total"
  // (the plan's figure).
  CHECK(planned["weights_packed"].GetUint64() > 0);
  CHECK(planned["weights_packed"].GetUint64() <= planned["weights"].GetUint64());
  // kv_cache: 2 layers x 2 kv heads x 2 (k, v) x 16 x 2 B = 256 B/token at
  // capacity 1024, plus the fused decode's fixed-size counters state (64 B)
  // and the sampler's histogram (8 rows x 65536 keys x 4 B).
  // kv_cache + decode_counters (ceil(V / 8) + 1 = 33 counters: the lm_head's tiles and its argmax) + sample_histogram.
  CHECK(planned["states"].GetUint64() == 256 * 1024 + 4 * 33 + 8 * 65536 * 4);
  CHECK(planned["total"].GetUint64() == planned["weights"].GetUint64() + planned["io"].GetUint64() +
                                            planned["arena"].GetUint64() + planned["states"].GetUint64());
  CHECK(planned["peak_rss"].GetUint64() > 0);
}

TEST_CASE("kern-run --capacity inside a KV page decodes up to it: the state holds whole pages", "[run][cli]") {
  // 3 + 20 tokens cross into the second 16-token page; capacity 25 covers
  // them. The state used to hold exactly 25 tokens, and decode's attention
  // read page 1 past its end.
  auto ids = [](const std::string& cap) {
    CliResult r = kern_run(tiny_cpu_args("--prompt-ids 1,2,3 --steps 20 --json --capacity " + cap));
    INFO(r.err);
    REQUIRE(r.rc == 0);
    rapidjson::Document doc;
    doc.Parse(r.out.c_str());
    REQUIRE_FALSE(doc.HasParseError());
    CHECK(doc["generated_ids"].Size() == 20);
    return std::string(r.out.substr(r.out.find("\"generated_ids\""), r.out.find(']') - r.out.find("\"generated_ids\"")));
  };
  CHECK(ids("25") == ids("32"));
  CliResult over = kern_run(tiny_cpu_args("--prompt-ids 1,2,3 --steps 23 --capacity 25"));
  CHECK(over.rc == 2);
  CHECK_THAT(over.err, Contains("= 26 tokens exceeds the capacity 25 tokens"));
}

namespace {

/// A copy of `from` at `to` (the inputs the tests below must not lose).
void copy_file(const std::string& from, const std::string& to) {
  std::ofstream(to, std::ios::binary) << slurp(from);
}

}  // namespace

TEST_CASE("kern-run --dump-buffer refuses to overwrite an input: the plan, the weights, the tokenizer", "[run][cli]") {
  TempDir dir;
  const std::string plan = dir.file("p.kplan"), weights = dir.file("w.safetensors"), tok = dir.file("tok.json");
  copy_file(env_path("KERN_TINY_PLAN"), plan);
  copy_file(env_path("KERN_TINY_WEIGHTS"), weights);
  std::ofstream(tok) << "{}";
  const std::string plan_bytes = slurp(plan), weight_bytes = slurp(weights);
  const std::string base = plan + " --weights " + weights + " --device cpu --prompt-ids 5,6 --steps 1 ";
  struct Case {
    std::string dump, what, input;
  };
  // Another spelling of the same file (./, a symlink) is the same file.
  REQUIRE(::symlink(weights.c_str(), dir.file("link.safetensors").c_str()) == 0);
  for (const Case& c : {Case{plan, "plan", plan}, Case{dir.file("./w.safetensors"), "weights file", weights},
                        Case{dir.file("link.safetensors"), "weights file", weights}}) {
    CliResult r = kern_run(base + "--dump-buffer logits=" + c.dump);
    INFO(r.err);
    CHECK(r.rc == 2);
    CHECK(r.err == "kern-run: error: --dump-buffer logits=" + c.dump + " is the " + c.what + " " + c.input +
                       "; refusing to overwrite an input (choose another path)\n");
  }
  CliResult t = kern_run(base + "--tokenizer " + tok + " --dump-buffer next_token=" + tok);
  CHECK(t.rc == 2);
  CHECK_THAT(t.err, Contains("is the tokenizer " + tok + "; refusing to overwrite an input"));
  CHECK(slurp(plan) == plan_bytes);
  CHECK(slurp(weights) == weight_bytes);
  CHECK(slurp(tok) == "{}");
  struct stat st {};
  REQUIRE(::lstat(dir.file("link.safetensors").c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));
}

TEST_CASE("kern-run refuses two --dump-buffer flags naming the same file, allows two through /dev/null", "[run][cli]") {
  TempDir dir;
  const std::string out = dir.file("x.bin");
  CliResult r = kern_run(tiny_cpu_args("--prompt-ids 5,6 --steps 1 --dump-buffer logits=" + out +
                                   " --dump-buffer next_token=" + dir.file("./x.bin")));
  CHECK(r.rc == 2);
  CHECK(r.err == "kern-run: error: --dump-buffer next_token=" + dir.file("./x.bin") +
                     " names the same file as --dump-buffer logits=" + out +
                     "; the second would replace the first (give each its own file)\n");
  CHECK_FALSE(std::filesystem::exists(out));
  CliResult ok = kern_run(tiny_cpu_args("--prompt-ids 5,6 --steps 1 --dump-buffer logits=/dev/null "
                                    "--dump-buffer next_token=/dev/null"));
  INFO(ok.err);
  CHECK(ok.rc == 0);
}

TEST_CASE("kern-run --dump-buffer into a FIFO with no reader is an error at once, exit 2", "[run][cli]") {
  TempDir dir;
  const std::string fifo = dir.file("dump.fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // timeout bounds the old behaviour (open(2) waiting forever for a reader).
  CliResult r = kern_run(tiny_cpu_args("--prompt-ids 5,6 --steps 1 --dump-buffer next_token=" + fifo), "", "timeout 60 ");
  CHECK(r.rc == 2);
  CHECK(r.err == "kern-run: error: --dump-buffer next_token: " + fifo +
                     ": is a FIFO with no reader; nothing written (start the reader first)\n");
}

TEST_CASE("kern-run --dump-buffer through a link to /proc/self/fd/1 writes to stdout, the link stays", "[run][cli]") {
  // As /dev/stdout is (the test must not touch the real one): with stdout a
  // regular file, renaming over the link used to replace it with a file.
  TempDir dir;
  const std::string link = dir.file("stdout-link");
  REQUIRE(::symlink("/proc/self/fd/1", link.c_str()) == 0);
  CliResult r = kern_run(tiny_cpu_args("--prompt-ids 5,6,7 --steps 2 --dump-buffer next_token=" + link));
  INFO(r.err);
  REQUIRE(r.rc == 0);
  struct stat st {};
  REQUIRE(::lstat(link.c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));
  // The dump is written before the report: 8 bytes of the last id, then the text.
  REQUIRE(r.out.size() > 8);
  int64_t id = 0;
  std::memcpy(&id, r.out.data(), 8);
  const std::string text = r.out.substr(8);
  CHECK_THAT(text, StartsWith("generated ids: "));
  const std::string first_line = text.substr(0, text.find('\n'));
  CHECK(first_line.substr(first_line.size() - std::to_string(id).size()) == std::to_string(id));
}
