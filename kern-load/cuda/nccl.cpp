// NCCL via dlopen (nccl.h).
#include "kern-load/cuda/nccl.h"

#include <dlfcn.h>

#include <type_traits>

#include "kern-load/cuda/library_search.h"

namespace kern::load::cuda {

struct NcclComm::Api {
  NcclGetVersionFn get_version = nullptr;
  NcclGetUniqueIdFn get_unique_id = nullptr;
  NcclCommInitRankFn init_rank = nullptr;
  NcclCommDestroyFn destroy = nullptr;
  NcclGetErrorStringFn error_string = nullptr;
  NcclGetLastErrorFn last_error = nullptr;
  NcclAllGatherFn all_gather = nullptr;
};

std::string nccl_version_text(int code) {
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
}

Result<std::unique_ptr<NcclComm>> NcclComm::load(const std::string& library) {
  std::unique_ptr<NcclComm> c(new NcclComm());
  const std::string what = "NCCL (for tensor parallelism on the cuda device) is not available: ";
  if (library.find('/') != std::string::npos) {
    c->handle_lib_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (c->handle_lib_ == nullptr) {
      const char* why = dlerror();
      return make_error(ErrorKind::kDevice, what + "dlopen " + library + " failed: " + (why ? why : "unknown error"));
    }
    c->path_ = library;
  } else {
    auto opened = search_cuda_library({"libnccl.so.2"}, LibrarySearchEnv::from_process());
    if (!opened.ok())
      return make_error(ErrorKind::kDevice, what + opened.error().message + " (install NCCL " +
                                                nccl_version_text(kNcclMinVersion) +
                                                " or newer: Debian's libnccl2, NVIDIA's libnccl2 package or the "
                                                "nvidia-nccl-cu13 wheel)");
    c->handle_lib_ = opened.value().handle;
    c->path_ = opened.value().path;
  }
  c->api_ = std::make_unique<Api>();
  Api& a = *c->api_;
  auto sym = [&](auto& slot, const char* name) -> Status {
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(dlsym(c->handle_lib_, name));
    if (!slot) return make_error(ErrorKind::kDevice, "NCCL " + c->path_ + ": missing symbol " + name);
    return Status::ok_status();
  };
  KERN_RETURN_IF_ERROR(sym(a.get_version, "ncclGetVersion"));
  KERN_RETURN_IF_ERROR(sym(a.error_string, "ncclGetErrorString"));
  KERN_RETURN_IF_ERROR(c->check(a.get_version(&c->version_), "ncclGetVersion"));
  if (c->version_ < kNcclMinVersion)
    return make_error(ErrorKind::kDevice, "NCCL " + nccl_version_text(c->version_) + " (" + c->path_ +
                                              ") is too old: kern needs " + nccl_version_text(kNcclMinVersion) +
                                              " or newer");
  KERN_RETURN_IF_ERROR(sym(a.get_unique_id, "ncclGetUniqueId"));
  KERN_RETURN_IF_ERROR(sym(a.init_rank, "ncclCommInitRank"));
  KERN_RETURN_IF_ERROR(sym(a.destroy, "ncclCommDestroy"));
  KERN_RETURN_IF_ERROR(sym(a.last_error, "ncclGetLastError"));
  KERN_RETURN_IF_ERROR(sym(a.all_gather, "ncclAllGather"));
  return c;
}

// handle_lib_ is never dlclosed (nccl.h).
NcclComm::~NcclComm() { (void)close(); }

Status NcclComm::check(ncclResult_t r, const char* call) const {
  if (r == ncclSuccess) return Status::ok_status();
  std::string msg = std::string(call) + ": ";
  const char* text = api_ && api_->error_string ? api_->error_string(r) : nullptr;
  msg += text ? text : "ncclResult_t " + std::to_string(int(r));
  const char* last = api_ && api_->last_error ? api_->last_error(comm_) : nullptr;
  if (last != nullptr && *last != '\0') msg += std::string(" (") + last + ")";
  return make_error(ErrorKind::kDevice, msg);
}

Result<ncclUniqueId> NcclComm::unique_id() {
  ncclUniqueId id{};
  KERN_RETURN_IF_ERROR(check(api_->get_unique_id(&id), "ncclGetUniqueId"));
  return id;
}

Status NcclComm::init_rank(const ncclUniqueId& id, uint32_t rank, uint32_t world) {
  if (comm_ != nullptr) return make_error(ErrorKind::kDevice, "ncclCommInitRank: this rank has joined already");
  return check(api_->init_rank(&comm_, static_cast<int>(world), id, static_cast<int>(rank)), "ncclCommInitRank");
}

Status NcclComm::all_gather_f32(CUdeviceptr in, CUdeviceptr out, uint64_t count, CUstream stream) {
  if (comm_ == nullptr) return make_error(ErrorKind::kDevice, "ncclAllGather: no communicator (init_rank first)");
  return check(api_->all_gather(reinterpret_cast<const void*>(in), reinterpret_cast<void*>(out), count, ncclFloat32,
                                comm_, stream),
               "ncclAllGather");
}

Status NcclComm::close() {
  if (comm_ == nullptr || !api_) return Status::ok_status();
  ncclComm_t comm = comm_;
  comm_ = nullptr;
  return check(api_->destroy(comm), "ncclCommDestroy");
}

}  // namespace kern::load::cuda
