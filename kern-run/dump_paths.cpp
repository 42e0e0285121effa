// Checks of kern-run's --dump-buffer destinations (dump_paths.h).
#include "kern-run/dump_paths.h"

#include <string>
#include <utility>
#include <vector>

#include "common/file_util.h"

namespace kern::run {

Status check_dump_paths(const RunOptions& o) {
  std::vector<std::pair<const char*, std::string>> inputs = {{"plan", o.plan_path}};
  if (!o.load.weights_path.empty()) inputs.emplace_back("weights file", o.load.weights_path);
  if (!o.tokenizer_path.empty()) inputs.emplace_back("tokenizer", o.tokenizer_path);
  if (!o.prompt_file.empty() && o.prompt_file != "-") inputs.emplace_back("prompt file", o.prompt_file);
  for (size_t i = 0; i < o.dumps.size(); ++i) {
    const DumpRequest& d = o.dumps[i];
    const std::string flag = "--dump-buffer " + d.buffer + "=" + d.path;
    // An unwritable destination is found now, not after the whole run.
    KERN_RETURN_IF_ERROR(check_output_path(d.path), "--dump-buffer " + d.buffer);
    for (const auto& [what, path] : inputs)
      if (same_file(d.path, path))
        return make_error(ErrorKind::kUsage, flag + " is the " + what + " " + path +
                                                 "; refusing to overwrite an input (choose another path)");
    for (size_t j = 0; j < i; ++j)
      if (same_file(d.path, o.dumps[j].path) && output_is_replaced(d.path))
        return make_error(ErrorKind::kUsage, flag + " names the same file as --dump-buffer " + o.dumps[j].buffer +
                                                 "=" + o.dumps[j].path +
                                                 "; the second would replace the first (give each its own file)");
  }
  return {};
}

}  // namespace kern::run
