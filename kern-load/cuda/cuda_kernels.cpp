// CudaDevice::load_kernels (SPEC §6): load every kernel file under the
// kernels dir plus every file the plan pins (sha256 checked first), then
// resolve each step: a pinned step only in its file, an unpinned one in any
// file, several definitions disambiguated by their parameter layouts; every
// resolved function's layout (cuFuncGetParamInfo) must equal the step's
// declared params. Extern steps bind to cublasLt (loaded on first need);
// the collectives need the NCCL communicator of attach_collective.
#include <algorithm>
#include <filesystem>
#include <map>

#include "common/extern_ops.h"
#include "common/plan_enums.h"
#include "kern-load/cuda/cuda_device.h"
#include "kern-load/cuda/cuda_function.h"
#include "kern-load/plan_file.h"

namespace kern::load::cuda {

namespace {

std::vector<ParamType> declared_params(const plan::Step& step) {
  std::vector<ParamType> out;
  for (const plan::Param* p : *step.params()) out.push_back(from_plan(*p));
  return out;
}

bool is_kernel_file(const std::filesystem::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".cubin" || ext == ".fatbin";
}

}  // namespace

Status CudaDevice::load_module(const std::string& dir, const std::string& file, std::string_view bytes,
                               const std::vector<const uint8_t*>& sha256s, Module& out) {
  const std::string path = (std::filesystem::path(dir) / file).string();
  KERN_RETURN_IF_ERROR(check_kernel_file_sha256(
      path, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), sha256s));
  out.file = file;
  const CUresult r = driver_->api().cuModuleLoadData(&out.module, bytes.data());
  if (r != CUDA_SUCCESS)
    return make_error(ErrorKind::kKernel, path + ": cuModuleLoadData: " + driver_->describe(r) +
                                              " (no SASS or PTX this GPU can run?)");
  return Status::ok_status();
}

namespace {

/// Kernel file name (relative to the kernels dir) -> the plan's pins of it.
using KernelFiles = std::map<std::string, std::vector<int>>;

/// Every kernel file under `kernels_dir`, plus every file the plan pins.
/// Errors: the dir cannot be listed while the plan pins files (kIo); no file
/// at all while some step needs one (kKernel).
Result<KernelFiles> list_kernel_files(const plan::Plan& p, const std::string& kernels_dir) {
  KernelFiles files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(kernels_dir, ec))
    if (e.is_regular_file() && is_kernel_file(e.path())) files[e.path().filename().string()];
  if (ec && p.cubins()->size() > 0)
    return make_error(ErrorKind::kIo, kernels_dir + ": cannot list the kernels dir: " + ec.message());
  for (flatbuffers::uoffset_t i = 0; i < p.cubins()->size(); ++i)
    files[p.cubins()->Get(i)->path()->str()].push_back(int(i));
  const bool needs_files = std::any_of(p.steps()->begin(), p.steps()->end(), [](const plan::Step* st) {
    return !is_extern_symbol(st->symbol()->string_view());
  });
  if (files.empty() && needs_files)
    return make_error(ErrorKind::kKernel, kernels_dir + ": no kernel files (.cubin/.fatbin) here; pass the directory "
                                                        "of the built fatbins with --kernels DIR (e.g. <build>/kernels)");
  return files;
}

/// Every file's bytes, read once (read_kernel_file: a FIFO or device is
/// refused, never waited on), and the architectures of its images for the
/// precheck; the same bytes are later sha256-checked and loaded.
struct KernelFileContents {
  std::map<std::string, std::string> bytes;  ///< file -> its bytes
  std::vector<KernelFileImages> images;
};

Result<KernelFileContents> read_kernel_files(const KernelFiles& files, const std::string& kernels_dir) {
  KernelFileContents out;
  for (const auto& [file, pins] : files) {
    const std::string path = (std::filesystem::path(kernels_dir) / file).string();
    KERN_ASSIGN_OR_RETURN(out.bytes[file], read_kernel_file(path));
    const std::string& b = out.bytes[file];
    KERN_ASSIGN_OR_RETURN(
        auto im, kernel_file_images(path, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(b.data()), b.size())));
    out.images.push_back(KernelFileImages{file, std::move(im)});
  }
  return out;
}

}  // namespace

Status CudaDevice::load_kernels(const PlanFile& plan_file, const std::string& kernels_dir) {
  const plan::Plan& p = plan_file.plan();
  const DriverApi& a = driver_->api();
  KERN_RETURN_IF_ERROR(bind_thread());
  StatusJoin unloaded;  // the modules of an earlier load_kernels
  for (Module& m : modules_) unloaded.add(driver_->check(a.cuModuleUnload(m.module), "cuModuleUnload"));
  modules_.clear();
  KERN_RETURN_IF_ERROR(unloaded.status(), "unloading the earlier kernels");

  KERN_ASSIGN_OR_RETURN(const KernelFiles files, list_kernel_files(p, kernels_dir));
  // Precheck (SPEC §6): every file's architectures and the plan's launch
  // geometry against this device, all mismatches at once, before any load.
  KERN_ASSIGN_OR_RETURN(const KernelFileContents contents, read_kernel_files(files, kernels_dir));
  KERN_ASSIGN_OR_RETURN(const DeviceLimits lim, limits());
  KERN_RETURN_IF_ERROR(check_plan_fits(p, contents.images, lim, name_));

  std::vector<size_t> module_of_pin(p.cubins()->size(), 0);
  for (const auto& [file, pins] : files) {
    std::vector<const uint8_t*> digests;  // every pin of this file must match its bytes
    for (int pin : pins) {
      const auto* sha = p.cubins()->Get(pin)->sha256();
      if (sha && sha->size() == 32) digests.push_back(sha->data());
      module_of_pin[pin] = modules_.size();
    }
    Module m;
    KERN_RETURN_IF_ERROR(load_module(kernels_dir, file, contents.bytes.at(file), digests, m));
    modules_.push_back(m);
  }

  steps_.assign(p.steps()->size(), StepFn{});
  fn_max_dynamic_smem_.clear();
  fn_static_smem_.clear();
  step_static_smem_.assign(p.steps()->size(), 0);
  step_symbols_.assign(p.steps()->size(), "");
  for (flatbuffers::uoffset_t i = 0; i < p.steps()->size(); ++i) {
    const plan::Step& step = *p.steps()->Get(i);
    step_symbols_[i] = step.symbol()->str();
    if (is_extern_symbol(step_symbols_[i])) {
      KERN_RETURN_IF_ERROR(bind_extern_step(p, i));
    } else {
      KERN_RETURN_IF_ERROR(bind_kernel_step(p, i, module_of_pin, static_cast<int>(lim.cc_major)));
    }
  }
  // The opt-in limit less each function's static shared memory (known only
  // now that the modules are loaded) bounds its dynamic shared memory.
  const std::vector<std::string> smem = precheck_shared_memory(p, step_static_smem_, lim.max_shared_mem_per_block);
  if (!smem.empty()) {
    std::string msg = "the plan does not fit " + name_ + ":";
    for (const std::string& l : smem) msg += "\n  " + l;
    return make_error(ErrorKind::kDevice, msg);
  }
  return Status::ok_status();
}

Status CudaDevice::bind_extern_step(const plan::Plan& p, uint32_t i) {
  const std::string& sym = step_symbols_[i];
  const std::string where = "steps[" + std::to_string(i) + "] " + sym;
  const ExternOpInfo* op = find_extern_op(sym);
  if (op == nullptr) return make_error(ErrorKind::kKernel, where + ": unknown extern op");
  if (op->collective && !nccl_)
    return make_error(ErrorKind::kKernel, where + ": this device belongs to no tensor-parallel world (run with --tp N)");
  if (!extern_op_params_match(*op, declared_params(*p.steps()->Get(i))))  // the ABI launch() reads
    return make_error(ErrorKind::kKernel, where + ": params must be [" + extern_op_params_text(*op) + "]");
  if (!cublaslt_) {
    KERN_CU_CHECK(*driver_, driver_->api().cuMemAlloc(&workspace_, kWorkspaceBytes));
    KERN_ASSIGN_OR_RETURN(cublaslt_, CublasLt::load(workspace_, kWorkspaceBytes), where);
  }
  steps_[i].op = op->id;
  return Status::ok_status();
}

Status CudaDevice::bind_kernel_step(const plan::Plan& p, uint32_t i, const std::vector<size_t>& module_of_pin,
                                    int cc_major) {
  const plan::Step& step = *p.steps()->Get(i);
  const std::string& sym = step_symbols_[i];
  const std::string where = "steps[" + std::to_string(i) + "] " + sym;
  std::vector<Instance> instances;
  std::vector<CUfunction> fns;
  for (size_t mi = 0; mi < modules_.size(); ++mi) {
    if (step.cubin() >= 0 && module_of_pin[step.cubin()] != mi) continue;  // pinned: its file only
    CUfunction fn = nullptr;
    const CUresult r = driver_->api().cuModuleGetFunction(&fn, modules_[mi].module, sym.c_str());
    if (r == CUDA_ERROR_NOT_FOUND) continue;
    if (r != CUDA_SUCCESS)
      return make_error(ErrorKind::kDevice, where + ": cuModuleGetFunction in " + modules_[mi].file + ": " +
                                                driver_->describe(r));
    KERN_ASSIGN_OR_RETURN(auto layout, read_param_layout(driver_->api(), fn), where + " in " + modules_[mi].file);
    instances.push_back(Instance{modules_[mi].file, std::move(layout)});
    fns.push_back(fn);
  }
  if (instances.empty() && step.cubin() >= 0)
    return make_error(ErrorKind::kKernel,
                      where + ": not found in its pinned file " + p.cubins()->Get(step.cubin())->path()->str());
  KERN_ASSIGN_OR_RETURN(auto chosen, select_instance(sym, declared_params(step), instances),
                        "steps[" + std::to_string(i) + "]");
  steps_[i].fn = fns[chosen];
  steps_[i].pdl = use_pdl(step.pdl(), cc_major, pdl_);
  // The default dynamic limit is 48 KiB minus the kernel's static shared
  // memory (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, cuda.h): read
  // it rather than assume 48 KiB, once per function; the static bytes also
  // bound what the dynamic limit can be raised to (precheck_shared_memory).
  auto [it, inserted] = fn_max_dynamic_smem_.try_emplace(fns[chosen], 0);
  auto [st, fresh] = fn_static_smem_.try_emplace(fns[chosen], 0);
  if (inserted || fresh) {
    KERN_ASSIGN_OR_RETURN(const FunctionSharedMemory smem, read_shared_memory(driver_->api(), fns[chosen]), where);
    it->second = static_cast<uint32_t>(std::min<uint64_t>(smem.max_dynamic_bytes, UINT32_MAX));
    st->second = smem.static_bytes;
  }
  steps_[i].max_dynamic_smem = &it->second;
  step_static_smem_[i] = st->second;
  return Status::ok_status();
}

}  // namespace kern::load::cuda
