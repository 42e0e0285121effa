// CudaDevice::load_kernels (SPEC §6): load every kernel file under the
// kernels dir plus every file the plan pins (sha256 checked first), then
// resolve each step: a pinned step only in its file, an unpinned one in any
// file, several definitions disambiguated by their parameter layouts; every
// resolved function's layout (cuFuncGetParamInfo) must equal the step's
// declared params. Extern steps bind to cublasLt (loaded on first need).
#include <algorithm>
#include <filesystem>
#include <map>

#include "kern-load/cuda/cuda_device.h"
#include "kern-load/plan_file.h"

namespace kern::load::cuda {

namespace {

std::vector<ParamType> declared_params(const plan::Step& step) {
  std::vector<ParamType> out;
  for (const plan::Param* p : *step.params()) {
    ParamType t;
    t.kind = static_cast<ParamKind>(p->kind());
    t.access = static_cast<Access>(p->access());
    t.dtype = static_cast<DType>(p->dtype());
    out.push_back(t);
  }
  return out;
}

bool is_kernel_file(const std::filesystem::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".cubin" || ext == ".fatbin";
}

}  // namespace

Result<std::vector<ParamSlot>> CudaDevice::param_layout(CUfunction fn) const {
  std::vector<ParamSlot> out;
  for (size_t i = 0;; ++i) {
    size_t offset = 0, size = 0;
    const CUresult r = driver_->api().cuFuncGetParamInfo(fn, i, &offset, &size);
    if (r == CUDA_ERROR_INVALID_VALUE) break;  // past the last param
    if (r != CUDA_SUCCESS) return make_error(ErrorKind::kDevice, "cuFuncGetParamInfo: " + driver_->describe(r));
    out.push_back(ParamSlot{offset, size});
  }
  return out;
}

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

Status CudaDevice::load_kernels(const PlanFile& plan_file, const std::string& kernels_dir) {
  const plan::Plan& p = plan_file.plan();
  const DriverApi& a = driver_->api();
  KERN_CU_CHECK(*driver_, a.cuCtxSetCurrent(context_));
  for (Module& m : modules_) (void)a.cuModuleUnload(m.module);
  modules_.clear();

  // Files: everything under the dir, plus what the plan pins (file -> its pin indices).
  std::map<std::string, std::vector<int>> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(kernels_dir, ec))
    if (e.is_regular_file() && is_kernel_file(e.path())) files[e.path().filename().string()];
  if (ec && p.cubins()->size() > 0)
    return make_error(ErrorKind::kIo, kernels_dir + ": cannot list the kernels dir: " + ec.message());
  for (flatbuffers::uoffset_t i = 0; i < p.cubins()->size(); ++i)
    files[p.cubins()->Get(i)->path()->str()].push_back(int(i));
  const bool needs_files = std::any_of(p.steps()->begin(), p.steps()->end(), [](const plan::Step* st) {
    return st->symbol()->string_view().rfind("extern:", 0) != 0;
  });
  if (files.empty() && needs_files)
    return make_error(ErrorKind::kKernel, kernels_dir + ": no kernel files (.cubin/.fatbin) here; pass the directory "
                                                        "of the built fatbins with --kernels DIR (e.g. <build>/kernels)");
  // Precheck (SPEC §6): every file's architectures and the plan's launch
  // geometry against this device, all mismatches at once, before any load.
  // Each file is read once (read_kernel_file: a FIFO or device is refused,
  // never waited on); the same bytes are prechecked, sha256-checked and loaded.
  std::map<std::string, std::string> contents;
  std::vector<KernelFileImages> images;
  for (const auto& [file, pins] : files) {
    const std::string path = (std::filesystem::path(kernels_dir) / file).string();
    auto bytes = read_kernel_file(path);
    if (!bytes.ok()) return bytes.error();
    const std::string& b = contents[file] = std::move(bytes.value());
    auto im = kernel_file_images(path, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(b.data()), b.size()));
    if (!im.ok()) return im.error();
    images.push_back(KernelFileImages{file, std::move(im.value())});
  }
  auto lim = limits();
  if (!lim.ok()) return lim.error();
  KERN_RETURN_IF_ERROR(check_plan_fits(p, images, *lim, name_));

  std::vector<size_t> module_of_pin(p.cubins()->size(), 0);
  for (const auto& [file, pins] : files) {
    std::vector<const uint8_t*> digests;  // every pin of this file must match its bytes
    for (int pin : pins) {
      const auto* sha = p.cubins()->Get(pin)->sha256();
      if (sha && sha->size() == 32) digests.push_back(sha->data());
      module_of_pin[pin] = modules_.size();
    }
    Module m;
    KERN_RETURN_IF_ERROR(load_module(kernels_dir, file, contents.at(file), digests, m));
    modules_.push_back(m);
  }

  steps_.assign(p.steps()->size(), StepFn{});
  step_symbols_.assign(p.steps()->size(), "");
  for (flatbuffers::uoffset_t i = 0; i < p.steps()->size(); ++i) {
    const plan::Step& step = *p.steps()->Get(i);
    const std::string sym = step.symbol()->str();
    const std::string where = "steps[" + std::to_string(i) + "] " + sym;
    step_symbols_[i] = sym;
    const std::vector<ParamType> declared = declared_params(step);
    if (sym.rfind("extern:", 0) == 0) {
      const ExternOp op = parse_extern_op(sym);
      if (op == ExternOp::kNone) return make_error(ErrorKind::kKernel, where + ": unknown extern op");
      const bool abi_ok = declared.size() == 6 && declared[0].is_pointer() && declared[1].is_pointer() &&
                          declared[2].is_pointer() && declared[3].kind == ParamKind::kI32 &&
                          declared[4].kind == ParamKind::kI32 && declared[5].kind == ParamKind::kI32;
      if (!abi_ok)
        return make_error(ErrorKind::kKernel, where + ": params must be (a, w, c buffers, i32 m, i32 n, i32 k)");
      if (!cublaslt_) {
        KERN_CU_CHECK(*driver_, a.cuMemAlloc(&workspace_, kWorkspaceBytes));
        auto lt = CublasLt::load(workspace_, kWorkspaceBytes);
        if (!lt.ok()) return lt.error().with_context(where);
        cublaslt_ = std::move(lt.value());
      }
      steps_[i].op = op;
      continue;
    }
    std::vector<Instance> instances;
    std::vector<CUfunction> fns;
    for (size_t mi = 0; mi < modules_.size(); ++mi) {
      if (step.cubin() >= 0 && module_of_pin[step.cubin()] != mi) continue;  // pinned: its file only
      CUfunction fn = nullptr;
      const CUresult r = a.cuModuleGetFunction(&fn, modules_[mi].module, sym.c_str());
      if (r == CUDA_ERROR_NOT_FOUND) continue;
      if (r != CUDA_SUCCESS)
        return make_error(ErrorKind::kDevice, where + ": cuModuleGetFunction in " + modules_[mi].file + ": " +
                                                  driver_->describe(r));
      auto layout = param_layout(fn);
      if (!layout.ok()) return layout.error().with_context(where + " in " + modules_[mi].file);
      instances.push_back(Instance{modules_[mi].file, std::move(layout.value())});
      fns.push_back(fn);
    }
    if (instances.empty() && step.cubin() >= 0)
      return make_error(ErrorKind::kKernel, where + ": not found in its pinned file " +
                                                p.cubins()->Get(step.cubin())->path()->str());
    auto chosen = select_instance(sym, declared, instances);
    if (!chosen.ok()) return chosen.error().with_context("steps[" + std::to_string(i) + "]");
    steps_[i].fn = fns[chosen.value()];
    steps_[i].pdl = use_pdl(step.pdl(), static_cast<int>(lim->cc_major));
  }
  return Status::ok_status();
}

}  // namespace kern::load::cuda
