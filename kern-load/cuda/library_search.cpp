// Finding the CUDA driver and cublasLt at run time (library_search.h).
#include "kern-load/cuda/library_search.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <unordered_set>

namespace kern::load::cuda {

namespace fs = std::filesystem;

namespace {

std::string getenv_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

void add_unique(std::vector<std::string>& out, const std::string& dir) {
  if (!dir.empty() && std::find(out.begin(), out.end(), dir) == out.end()) out.push_back(dir);
}

/// The file-system probes of one search, counted when the env asks.
class Prober {
 public:
  explicit Prober(uint64_t* count) : count_(count) {}

  /// Sorted names of the entries of `dir` (none when it is missing or unreadable).
  std::vector<std::string> sorted_entries(const fs::path& dir) {
    tick();
    std::vector<std::string> names;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      names.push_back(it->path().filename());
    std::sort(names.begin(), names.end());
    return names;
  }

  bool is_dir(const fs::path& p) {
    tick();
    std::error_code ec;
    return fs::is_directory(p, ec);
  }

  bool exists(const std::string& p) {
    tick();
    std::error_code ec;
    return fs::exists(p, ec);
  }

  /// Whether `dir` holds an executable file whose name starts with "python3".
  bool has_python3(const fs::path& dir) {
    for (const std::string& name : sorted_entries(dir)) {
      if (name.rfind("python3", 0) != 0) continue;
      tick();
      std::error_code ec;
      if (fs::is_regular_file(dir / name, ec) && access((dir / name).c_str(), X_OK) == 0) return true;
    }
    return false;
  }

  /// Appends `<prefix>/lib/python3*/{site,dist}-packages/nvidia/*/lib` (existing, sorted).
  void add_wheel_dirs(std::vector<std::string>& out, const fs::path& prefix) {
    for (const std::string& py : sorted_entries(prefix / "lib")) {
      if (py.rfind("python3", 0) != 0) continue;
      for (const char* packages : {"site-packages", "dist-packages"}) {
        const fs::path nvidia = prefix / "lib" / py / packages / "nvidia";
        for (const std::string& pkg : sorted_entries(nvidia))
          if (is_dir(nvidia / pkg / "lib")) add_unique(out, (nvidia / pkg / "lib").string());
      }
    }
  }

 private:
  void tick() {
    if (count_ != nullptr) ++*count_;
  }
  uint64_t* count_;
};

std::string last_dlerror() {
  const char* e = dlerror();
  return e ? e : "unknown error";
}

}  // namespace

LibrarySearchEnv LibrarySearchEnv::from_process() {
  LibrarySearchEnv env;
  env.cuda_home = getenv_or_empty("CUDA_HOME");
  if (env.cuda_home.empty()) env.cuda_home = getenv_or_empty("CUDA_PATH");
  env.path = getenv_or_empty("PATH");
  env.virtual_env = getenv_or_empty("VIRTUAL_ENV");
  return env;
}

std::vector<std::string> cuda_library_dirs(const LibrarySearchEnv& env) {
  Prober probe(env.probe_count);
  std::vector<std::string> dirs;
  for (const std::string& home : {env.cuda_home, std::string("/usr/local/cuda")}) {
    if (home.empty()) continue;
    add_unique(dirs, home + "/lib64");
    add_unique(dirs, home + "/targets/x86_64-linux/lib");
  }
  for (const std::string& d : env.extra_dirs) add_unique(dirs, d);
  // Each distinct PATH directory is examined once, each prefix globbed once:
  // a PATH of 14,000 entries, mostly repeats, costs its distinct entries.
  std::vector<fs::path> prefixes;
  auto add_prefix = [&](const fs::path& p) {
    if (std::find(prefixes.begin(), prefixes.end(), p) == prefixes.end()) prefixes.push_back(p);
  };
  if (!env.virtual_env.empty()) add_prefix(env.virtual_env);
  std::unordered_set<std::string> seen_bins;
  size_t start = 0;
  while (start <= env.path.size()) {
    size_t end = env.path.find(':', start);
    if (end == std::string::npos) end = env.path.size();
    const std::string bin = env.path.substr(start, end - start);
    start = end + 1;
    if (bin.empty() || !seen_bins.insert(bin).second) continue;
    // A venv's bin/python3 is a symlink to the base interpreter: the venv's own
    // site-packages are found from the unresolved directory, so no canonicalising.
    if (probe.has_python3(bin)) add_prefix(fs::path(bin).parent_path());
  }
  for (const std::string& p : env.python_prefixes) add_prefix(p);
  for (const fs::path& prefix : prefixes) probe.add_wheel_dirs(dirs, prefix);
  return dirs;
}

Result<OpenedLibrary> open_cuda_library(const std::vector<std::string>& sonames, const std::vector<std::string>& dirs,
                                        uint64_t* probe_count) {
  Prober probe(probe_count);
  std::vector<std::string> failures;   // "dlopen X: why", in the order tried
  std::vector<std::string> absent_in;  // directories that held none of the sonames
  std::vector<bool> held(dirs.size(), false);
  for (const std::string& soname : sonames) {
    std::vector<std::string> candidates{soname};
    for (size_t i = 0; i < dirs.size(); ++i) {
      const std::string path = dirs[i] + "/" + soname;
      if (!probe.exists(path)) continue;
      held[i] = true;
      candidates.push_back(path);
    }
    for (const std::string& c : candidates) {
      if (void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)) return OpenedLibrary{h, c};
      failures.push_back("dlopen " + c + " failed: " + last_dlerror());
    }
  }
  for (size_t i = 0; i < dirs.size(); ++i)
    if (!held[i]) absent_in.push_back(dirs[i]);
  std::string msg;
  for (const std::string& f : failures) msg += (msg.empty() ? "" : "; ") + f;
  if (!absent_in.empty()) {
    std::string names, where;
    for (const std::string& s : sonames) names += (names.empty() ? "" : ", ") + s;
    for (const std::string& d : absent_in) where += (where.empty() ? "" : ", ") + d;
    msg += "; no " + names + " in " + where;
  }
  return make_error(ErrorKind::kDevice, msg);
}

Result<OpenedLibrary> search_cuda_library(const std::vector<std::string>& sonames, const LibrarySearchEnv& env) {
  // The loader's own answer for the newest soname needs no directory scan:
  // the usual case on a GPU machine (libcuda.so.1 in the ld.so cache).
  if (!sonames.empty())
    if (void* h = dlopen(sonames.front().c_str(), RTLD_NOW | RTLD_LOCAL)) return OpenedLibrary{h, sonames.front()};
  return open_cuda_library(sonames, cuda_library_dirs(env), env.probe_count);
}

Result<OpenedLibrary> open_cuda_driver(const std::string& soname) {
  LibrarySearchEnv env = LibrarySearchEnv::from_process();
  env.extra_dirs = kCudaDriverDirs;
  return search_cuda_library({soname}, env);
}

}  // namespace kern::load::cuda
