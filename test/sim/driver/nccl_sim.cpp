// The simulated libnccl.so.2 (docs/gpu.md "The simulated GPU"): the NCCL
// calls the cuda device makes (kern-load/cuda/nccl.cpp) across the rank
// processes of `kern-run --tp N`, each simulating its own GPU. The transport
// is the filesystem: ncclGetUniqueId makes a private directory (mkdtemp under
// $TMPDIR) whose path is the id; ncclAllGather's i-th execution on rank r
// writes `c<i>.r<r>` there (a temp file renamed, so a reader never sees half
// of it) and reads every rank's file of the same i. The all-gather runs on
// the simulated driver's stream (sim_hooks.h), so it is ordered with the
// kernels and captured into graphs like them; i counts executions, so a
// replayed graph's all-gathers meet their peers' in order. Every wait is
// bounded: $KERN_SIM_NCCL_TIMEOUT_MS (default 60000: the simulated kernels
// of a peer may take long on a loaded machine); a peer that never comes is a
// violation naming it. $KERN_SIM_NCCL_VERSION (a version code, default
// 22809 = 2.28.9) lets tests play an old library.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "kern-load/cuda/nccl_abi.h"
#include "test/sim/driver/sim_hooks.h"

#define NCCL_EXPORT extern "C" __attribute__((visibility("default")))

struct ncclComm {
  std::string dir;
  int rank = 0, world = 1;
  uint64_t executed = 0;  ///< all-gathers executed (the next one's index)
};

namespace {

constexpr char kMagic[] = "kernSIMnccl1:";
thread_local std::string last_error;

ncclResult_t fail(ncclResult_t r, const std::string& why) {
  last_error = why;
  std::fprintf(stderr, "kern sim nccl: %s\n", why.c_str());
  return r;
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

std::chrono::milliseconds timeout() { return std::chrono::milliseconds(env_int("KERN_SIM_NCCL_TIMEOUT_MS", 60000)); }

/// Writes `bytes` to dir/name atomically (temp + rename). False on failure.
bool put(const std::string& dir, const std::string& name, const void* data, size_t bytes) {
  const std::string tmp = dir + "/." + name + ".tmp", path = dir + "/" + name;
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return false;
  const auto* p = static_cast<const char*>(data);
  size_t done = 0;
  while (done < bytes) {
    const ssize_t w = ::write(fd, p + done, bytes - done);
    if (w <= 0) break;
    done += size_t(w);
  }
  ::close(fd);
  return done == bytes && std::rename(tmp.c_str(), path.c_str()) == 0;
}

/// Waits (bounded) for dir/name of exactly `bytes` and reads it into `out`
/// (null: only waits). False when it did not come in time.
bool take(const std::string& dir, const std::string& name, void* out, size_t bytes,
          std::chrono::steady_clock::time_point deadline) {
  const std::string path = dir + "/" + name;
  auto pause = std::chrono::microseconds(50);
  for (;;) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd >= 0) {
      size_t done = 0;
      auto* p = static_cast<char*>(out);
      while (out != nullptr && done < bytes) {
        const ssize_t r = ::read(fd, p + done, bytes - done);
        if (r <= 0) break;
        done += size_t(r);
      }
      ::close(fd);
      return out == nullptr || done == bytes;
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::microseconds(2000));
  }
}

std::string call_file(uint64_t i, int rank) { return "c" + std::to_string(i) + ".r" + std::to_string(rank); }

/// Every rank's dir/<prefix><r>, waited for (bounded); "" or the missing ranks.
std::string wait_all(const ncclComm& c, const std::string& prefix, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::string missing;
  for (int r = 0; r < c.world; ++r)
    if (!take(c.dir, prefix + std::to_string(r), nullptr, 0, deadline))
      missing += (missing.empty() ? "" : ", ") + std::to_string(r);
  return missing;
}

}  // namespace

NCCL_EXPORT ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return ncclInvalidArgument;
  *version = env_int("KERN_SIM_NCCL_VERSION", 22809);
  return ncclSuccess;
}

NCCL_EXPORT const char* ncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error";
    case ncclSystemError: return "unhandled system error";
    case ncclInternalError: return "internal error";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage";
    case ncclRemoteError: return "remote process exited or there was a network error";
    default: return "unknown result code";
  }
}

NCCL_EXPORT const char* ncclGetLastError(ncclComm_t) { return last_error.c_str(); }

NCCL_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  if (id == nullptr) return fail(ncclInvalidArgument, "ncclGetUniqueId: null id");
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/kern-simnccl.XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) return fail(ncclSystemError, "ncclGetUniqueId: mkdtemp " + templ + " failed");
  const std::string text = kMagic + templ;
  if (text.size() >= kNcclUniqueIdBytes) {
    ::rmdir(templ.c_str());
    return fail(ncclSystemError, "ncclGetUniqueId: $TMPDIR is too long for the simulated id");
  }
  std::memset(id->internal, 0, sizeof id->internal);
  std::memcpy(id->internal, text.data(), text.size());
  return ncclSuccess;
}

NCCL_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  if (comm == nullptr || nranks < 1 || rank < 0 || rank >= nranks)
    return fail(ncclInvalidArgument, "ncclCommInitRank: rank " + std::to_string(rank) + " of " +
                                         std::to_string(nranks));
  const std::string text(id.internal, strnlen(id.internal, sizeof id.internal));
  if (text.rfind(kMagic, 0) != 0) return fail(ncclInvalidArgument, "ncclCommInitRank: not an id of ncclGetUniqueId");
  auto* c = new ncclComm{text.substr(sizeof kMagic - 1), rank, nranks, 0};
  const char one = 1;
  if (!put(c->dir, "join" + std::to_string(rank), &one, 1)) {
    delete c;
    return fail(ncclSystemError, "ncclCommInitRank: cannot write in " + text.substr(sizeof kMagic - 1));
  }
  const std::string missing = wait_all(*c, "join", timeout());
  if (!missing.empty()) {
    delete c;
    return fail(ncclRemoteError, "ncclCommInitRank: ranks " + missing + " did not join within the timeout");
  }
  *comm = c;
  return ncclSuccess;
}

NCCL_EXPORT ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                       ncclDataType_t datatype, ncclComm_t comm, CUstream stream) {
  if (comm == nullptr) return fail(ncclInvalidArgument, "ncclAllGather: null communicator");
  if (datatype != ncclFloat32 && datatype != ncclBfloat16)
    return fail(ncclInvalidArgument, "ncclAllGather: only ncclFloat32 and ncclBfloat16 are simulated");
  const size_t bytes = sendcount * (datatype == ncclFloat32 ? 4 : 2);
  ncclComm* c = comm;
  auto work = [=]() -> std::string {
    const uint64_t i = c->executed++;
    if (!kern_sim_device_range(reinterpret_cast<uint64_t>(sendbuff), bytes) ||
        !kern_sim_device_range(reinterpret_cast<uint64_t>(recvbuff), bytes * size_t(c->world)))
      return "ncclAllGather: a buffer is not inside one device allocation";
    if (!put(c->dir, call_file(i, c->rank), sendbuff, bytes))
      return "ncclAllGather: cannot write in " + c->dir;
    const auto deadline = std::chrono::steady_clock::now() + timeout();
    std::string missing;
    for (int r = 0; r < c->world; ++r)
      if (!take(c->dir, call_file(i, r), static_cast<char*>(recvbuff) + size_t(r) * bytes, bytes, deadline))
        missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    if (!missing.empty())
      return "ncclAllGather #" + std::to_string(i) + " on rank " + std::to_string(c->rank) + ": ranks " + missing +
             " did not send within " + std::to_string(timeout().count()) + " ms";
    // Every rank has written call i, so every rank has read call i - 1.
    if (i > 0) ::unlink((c->dir + "/" + call_file(i - 1, c->rank)).c_str());
    kern_sim_shadow_launch_write(reinterpret_cast<uint64_t>(recvbuff), bytes * size_t(c->world));
    return "";
  };
  const CUresult r = kern_sim_enqueue_host_work(stream, "ncclAllGather " + std::to_string(bytes) + " B", work);
  if (r != CUDA_SUCCESS) return fail(ncclUnhandledCudaError, "ncclAllGather: enqueue on the stream failed");
  return ncclSuccess;
}

/// Ends a communicator: a bounded barrier ("done"), then "gone"; rank 0
/// removes the directory once every rank is gone (or the wait ran out).
NCCL_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  const char one = 1;
  ncclResult_t result = ncclSuccess;
  const auto limit = std::chrono::milliseconds(std::min<int64_t>(timeout().count(), 10000));
  if (!put(comm->dir, "done" + std::to_string(comm->rank), &one, 1) || !wait_all(*comm, "done", limit).empty())
    result = fail(ncclRemoteError, "ncclCommDestroy: not every rank reached it");
  put(comm->dir, "gone" + std::to_string(comm->rank), &one, 1);
  if (comm->rank == 0) {
    (void)wait_all(*comm, "gone", limit);
    if (DIR* d = ::opendir(comm->dir.c_str())) {
      while (dirent* e = ::readdir(d))
        if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
          ::unlink((comm->dir + "/" + e->d_name).c_str());
      ::closedir(d);
    }
    ::rmdir(comm->dir.c_str());
  }
  delete comm;
  return result;
}

NCCL_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  delete comm;
  return ncclSuccess;
}
