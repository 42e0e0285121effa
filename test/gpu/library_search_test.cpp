// Tests of the CUDA library discovery (kern-load/cuda/library_search.h)
// against fabricated toolkit and Python wheel directory trees.
#include "kern-load/cuda/library_search.h"

#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using kern::load::cuda::cuda_library_dirs;
using kern::load::cuda::LibrarySearchEnv;
using kern::load::cuda::open_cuda_library;
using kern::load::cuda::search_cuda_library;

namespace {

/// A fresh temporary directory, removed on destruction.
struct TempTree {
  fs::path root;
  TempTree() {
    std::string tmpl = (fs::temp_directory_path() / "kern-libsearch-XXXXXX").string();
    root = mkdtemp(tmpl.data());
  }
  ~TempTree() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  fs::path dir(const std::string& rel) const {
    fs::create_directories(root / rel);
    return root / rel;
  }
  void file(const std::string& rel, const std::string& text, bool executable = false) const {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << text;
    if (executable) fs::permissions(root / rel, fs::perms::owner_all);
  }
};

/// The fake library built beside this test (meson passes its path in KERN_FAKE_CUDA_LIBRARY).
std::string fake_library() {
  const char* p = std::getenv("KERN_FAKE_CUDA_LIBRARY");
  return p ? p : "";
}

}  // namespace

TEST_CASE("library dirs: toolkit first, then the wheels of venvs on PATH, then system prefixes", "[cuda][libsearch]") {
  TempTree t;
  t.file("venv/bin/python3", "#!/bin/sh\n", true);
  t.file("nopython/bin/tool", "#!/bin/sh\n", true);
  t.file("nopython/bin/python3.d/x", "");  // a directory named python3*: not an interpreter
  t.dir("nopython/lib/python3.12/site-packages/nvidia/cublas/lib");
  t.dir("venv/lib/python3.12/site-packages/nvidia/cublas/lib");
  t.dir("venv/lib/python3.12/site-packages/nvidia/cu13/lib");
  t.dir("venv/lib/python3.12/site-packages/nvidia/nolib");  // no lib/: skipped
  t.dir("usr/lib/python3/dist-packages/nvidia/cudnn/lib");
  t.dir("other/lib/python3.11/site-packages/nvidia/cuda_runtime/lib");
  LibrarySearchEnv env;
  env.cuda_home = (t.root / "cuda").string();
  env.path = (t.root / "nopython/bin").string() + ":" + (t.root / "venv/bin").string() + "::/nonexistent";
  env.virtual_env = (t.root / "other").string();
  env.extra_dirs = {"/usr/local/nvidia/lib64"};
  env.python_prefixes = {(t.root / "usr").string(), (t.root / "venv").string()};
  const std::string r = t.root.string();
  const std::vector<std::string> want = {
      r + "/cuda/lib64",
      r + "/cuda/targets/x86_64-linux/lib",
      "/usr/local/cuda/lib64",
      "/usr/local/cuda/targets/x86_64-linux/lib",
      "/usr/local/nvidia/lib64",
      r + "/other/lib/python3.11/site-packages/nvidia/cuda_runtime/lib",
      r + "/venv/lib/python3.12/site-packages/nvidia/cu13/lib",
      r + "/venv/lib/python3.12/site-packages/nvidia/cublas/lib",
      r + "/usr/lib/python3/dist-packages/nvidia/cudnn/lib",
  };
  CHECK(cuda_library_dirs(env) == want);  // the venv, listed twice, appears once
}

TEST_CASE("library dirs without CUDA_HOME start at /usr/local/cuda", "[cuda][libsearch]") {
  LibrarySearchEnv env;
  env.python_prefixes = {};
  const auto dirs = cuda_library_dirs(env);
  REQUIRE(dirs.size() >= 2);
  CHECK(dirs[0] == "/usr/local/cuda/lib64");
  CHECK(dirs[1] == "/usr/local/cuda/targets/x86_64-linux/lib");
}

TEST_CASE("a library only in a wheel's lib directory is opened from there", "[cuda][libsearch]") {
  REQUIRE_FALSE(fake_library().empty());
  TempTree t;
  const fs::path wheel = t.dir("venv/lib/python3.12/site-packages/nvidia/cu13/lib");
  fs::copy_file(fake_library(), wheel / "libkern-fake-cublasLt.so.13");
  const std::vector<std::string> dirs = {(t.root / "cuda/lib64").string(), wheel.string()};
  auto lib = open_cuda_library({"libkern-fake-cublasLt.so.13", "libkern-fake-cublasLt.so.12"}, dirs);
  REQUIRE(lib.ok());
  CHECK(lib.value().path == (wheel / "libkern-fake-cublasLt.so.13").string());
  auto fn = reinterpret_cast<int (*)()>(dlsym(lib.value().handle, "kern_fake_cuda_library"));
  REQUIRE(fn != nullptr);
  CHECK(fn() == 42);
  dlclose(lib.value().handle);
}

TEST_CASE("the newer soname wins over an older one found earlier in the search", "[cuda][libsearch]") {
  REQUIRE_FALSE(fake_library().empty());
  TempTree t;
  const fs::path toolkit = t.dir("cuda/lib64"), wheel = t.dir("wheel/lib");
  fs::copy_file(fake_library(), toolkit / "libkern-fake2.so.12");
  fs::copy_file(fake_library(), wheel / "libkern-fake2.so.13");
  auto lib = open_cuda_library({"libkern-fake2.so.13", "libkern-fake2.so.12"}, {toolkit.string(), wheel.string()});
  REQUIRE(lib.ok());
  CHECK(lib.value().path == (wheel / "libkern-fake2.so.13").string());
  dlclose(lib.value().handle);
}

TEST_CASE("when nothing loads, the error lists every attempt and every directory searched", "[cuda][libsearch]") {
  TempTree t;
  const fs::path empty = t.dir("cuda/lib64"), broken = t.dir("wheel/lib");
  t.file("wheel/lib/libkern-none.so.13", "not an ELF file");
  auto lib = open_cuda_library({"libkern-none.so.13", "libkern-none.so"}, {empty.string(), broken.string()});
  REQUIRE_FALSE(lib.ok());
  const std::string& m = lib.error().message;
  INFO(m);
  CHECK(m.rfind("dlopen libkern-none.so.13 failed: ", 0) == 0);  // the loader's answer first
  const size_t bad = m.find("; dlopen " + (broken / "libkern-none.so.13").string() + " failed: ");
  const size_t plain = m.find("; dlopen libkern-none.so failed: ");
  CHECK(bad != std::string::npos);
  CHECK(plain != std::string::npos);
  CHECK(bad < plain);
  CHECK(m.find("; no libkern-none.so.13, libkern-none.so in " + empty.string()) != std::string::npos);
  CHECK(m.find(", " + broken.string()) == std::string::npos);  // it held a candidate: not "absent"
}

TEST_CASE("a PATH of 14,000 entries costs its distinct directories, not a rescan per entry", "[cuda][libsearch]") {
  // Counted in file-system probes (directories listed, files examined),
  // never timed. The old search listed /usr/bin-like directories and globbed
  // their prefix once per PATH entry: 14,000 entries took 22 s.
  TempTree t;
  t.file("venv/bin/python3", "#!/bin/sh\n", true);
  for (int i = 0; i < 50; ++i) t.file("venv/bin/tool" + std::to_string(i), "#!/bin/sh\n", true);
  t.dir("venv/lib/python3.12/site-packages/nvidia/cublas/lib");
  t.dir("other/bin");
  const std::string venv_bin = (t.root / "venv/bin").string(), other_bin = (t.root / "other/bin").string();
  auto probes_for = [&](const std::string& path) {
    LibrarySearchEnv env;
    env.path = path;
    env.python_prefixes = {};
    uint64_t probes = 0;
    env.probe_count = &probes;
    const auto dirs = cuda_library_dirs(env);
    CHECK(std::count(dirs.begin(), dirs.end(),
                     (t.root / "venv/lib/python3.12/site-packages/nvidia/cublas/lib").string()) == 1);
    return probes;
  };
  const uint64_t once = probes_for(venv_bin + ":" + other_bin);
  std::string long_path;
  for (int i = 0; i < 7000; ++i) long_path += venv_bin + ":" + other_bin + ":";
  CHECK(once > 0);
  CHECK(probes_for(long_path) == once);
}

TEST_CASE("a library the loader opens by its newest soname costs no directory probe", "[cuda][libsearch]") {
  TempTree t;
  t.file("venv/bin/python3", "#!/bin/sh\n", true);
  LibrarySearchEnv env;
  env.path = (t.root / "venv/bin").string();
  uint64_t probes = 0;
  env.probe_count = &probes;
  auto lib = search_cuda_library({"libc.so.6"}, env);  // in every loader cache
  REQUIRE(lib.ok());
  CHECK(lib.value().path == "libc.so.6");
  CHECK(probes == 0);
  dlclose(lib.value().handle);
  // A soname the loader lacks: the search runs, and is counted.
  auto none = search_cuda_library({"libkern-none-at-all.so.1"}, env);
  CHECK_FALSE(none.ok());
  CHECK(probes > 0);
}
