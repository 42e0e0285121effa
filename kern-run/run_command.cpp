#include "kern-run/run_command.h"

#include <filesystem>
#include <iostream>

#include "common/file_util.h"
#include "kern-load/device_select.h"
#include "kern-load/executable.h"
#include "kern-run/generate.h"
#include "kern-run/qwen3_contract.h"
#include "kern-run/report.h"
#include "spdlog/spdlog.h"

namespace kern::run {

namespace {

/// A dump resolved to its buffer index before anything runs.
struct ResolvedDump {
  uint32_t buffer;
  std::string name;
  std::string path;
};

Status write_dumps(load::Executable& exe, const std::vector<ResolvedDump>& dumps) {
  for (const auto& d : dumps) {
    // The buffer's size at its last use: the last program's symbol values.
    auto size = exe.buffer_size_bytes(d.buffer, exe.last_symbol_values());
    if (!size.ok()) return size.error().with_context("--dump-buffer " + d.name);
    std::string bytes(*size, '\0');
    Status s = exe.read_buffer(d.buffer, std::span(reinterpret_cast<uint8_t*>(bytes.data()), bytes.size()));
    if (s.ok()) s = write_file_atomic(d.path, bytes);
    if (!s.ok()) return s.error().with_context("--dump-buffer " + d.name);
    spdlog::info("wrote buffer '{}' ({} B) to {}", d.name, bytes.size(), d.path);
  }
  return {};
}

Status run(const RunOptions& o) {
  auto choice = load::parse_device_choice(o.device);
  if (!choice.ok()) return choice.error().with_context("--device");

  auto plan = load::PlanFile::open(o.plan_path);
  if (!plan.ok()) return plan.error();
  auto contract = resolve_qwen3_contract(plan.value());
  if (!contract.ok()) return contract.error();
  const Qwen3Contract& c = contract.value();

  std::vector<ResolvedDump> dumps;
  for (const auto& d : o.dumps) {
    int i = plan->find_buffer(d.buffer);
    if (i < 0)
      return make_error(ErrorKind::kUsage, "--dump-buffer: the plan has no buffer '" + d.buffer + "'");
    dumps.push_back({static_cast<uint32_t>(i), d.buffer, d.path});
  }

  GenerateRequest req{o.prompt_ids, o.steps, o.chunk, o.capacity.value_or(default_capacity(c))};
  KERN_RETURN_IF_ERROR(check_request(c, req));

  std::string note;
  auto device = load::select_device(*choice, &note);
  if (!device.ok()) return device.error();
  if (!note.empty()) spdlog::warn("{}", note);
  std::string device_name = device.value()->name();

  auto weights = load::Safetensors::open(o.weights_path);
  if (!weights.ok()) return weights.error();

  load::ExecutableOptions eo;
  eo.capacity_tokens = req.capacity;
  std::filesystem::path kernels_dir =
      o.kernels_dir.empty() ? std::filesystem::path(o.plan_path).parent_path() : std::filesystem::path(o.kernels_dir);
  eo.kernels_dir = kernels_dir.empty() ? std::filesystem::current_path().string() : kernels_dir.string();
  std::vector<std::string> notes;
  auto exe = load::Executable::load(std::move(plan.value()), std::move(device.value()), &weights.value(), eo, &notes);
  if (!exe.ok()) return exe.error();
  if (o.verbose)
    for (const auto& n : notes) spdlog::info("{}", n);
  spdlog::info("loaded {} on {}: {} B of device memory, capacity {} tokens", o.plan_path, device_name,
               exe.value()->memory().total_bytes, req.capacity);

  auto result = generate(*exe.value(), c, req);
  if (!result.ok()) return result.error();
  KERN_RETURN_IF_ERROR(write_dumps(*exe.value(), dumps));

  ReportContext ctx{&o.prompt_ids, device_name, req.capacity};
  if (o.json) {
    std::cout << render_json(result.value(), ctx) << "\n";
  } else {
    std::cout << render_text(result.value(), ctx);
  }
  std::cout.flush();
  return {};
}

}  // namespace

int exit_code_for(const Error& e) { return e.kind == ErrorKind::kUsage ? 2 : 1; }

int run_command(const RunOptions& options) {
  Status s = run(options);
  if (s.ok()) return 0;
  std::cerr << "kern-run: error: " << s.error().message << "\n";
  return exit_code_for(s.error());
}

}  // namespace kern::run
