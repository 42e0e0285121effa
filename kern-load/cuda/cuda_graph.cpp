// CudaDevice graphs (SPEC §6, graph_policy.h): the device's non-blocking
// stream is captured in thread-local mode (cuStreamBeginCapture), the
// captured graph instantiated (cuGraphInstantiateWithFlags) and its
// CUgraph freed; the CUgraphExec is the GraphHandle. Kernel parameters are
// copied into the graph at capture, so a replay needs the same symbol
// values, which Executable checks (check_replay).
#include <algorithm>

#include "kern-load/cuda/cuda_device.h"
#include "kern-load/cuda/cuda_function.h"

namespace kern::load::cuda {

Status CudaDevice::begin_capture() {
  const Driver& drv = *driver_;
  KERN_RETURN_IF_ERROR(bind_thread());
  KERN_CU_CHECK(drv, drv.api().cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  capturing_ = true;
  return Status::ok_status();
}

Result<GraphHandle> CudaDevice::end_capture() {
  const Driver& drv = *driver_;
  const DriverApi& a = drv.api();
  CUgraph graph = nullptr;
  capturing_ = false;
  KERN_RETURN_IF_ERROR(bind_thread());
  KERN_CU_CHECK(drv, a.cuStreamEndCapture(stream_, &graph));
  CUgraphExec exec = nullptr;
  const Status instantiated = drv.check(a.cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiateWithFlags");
  if (instantiated.ok()) graphs_.push_back(exec);  // owned from here: destroyed with the device
  // The CUgraph is not needed once instantiated; a failure to free it is kept.
  KERN_RETURN_IF_ERROR(join(instantiated, drv.check(a.cuGraphDestroy(graph), "cuGraphDestroy")));
  return reinterpret_cast<GraphHandle>(exec);
}

Status CudaDevice::abort_capture() {
  if (!capturing_) return {};
  capturing_ = false;
  KERN_RETURN_IF_ERROR(bind_thread());
  // A capture invalidated by the failed launch ends with
  // CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: expected, not joined to that
  // launch's error (end_abandoned_capture).
  return end_abandoned_capture(driver_->api(), stream_);
}

Status CudaDevice::launch_graph(GraphHandle graph) {
  KERN_RETURN_IF_ERROR(bind_thread());
  const CUresult r = driver_->api().cuGraphLaunch(reinterpret_cast<CUgraphExec>(graph), stream_);
  if (r != CUDA_SUCCESS) [[unlikely]]
    return make_error(ErrorKind::kDevice, "cuGraphLaunch: " + driver_->describe(r));
  return Status::ok_status();
}

Status CudaDevice::destroy_graph(GraphHandle graph) {
  auto exec = reinterpret_cast<CUgraphExec>(graph);
  auto it = std::find(graphs_.begin(), graphs_.end(), exec);
  if (it == graphs_.end()) return {};
  graphs_.erase(it);
  const Driver& drv = *driver_;
  KERN_RETURN_IF_ERROR(bind_thread());
  // The graph may still be running: wait, then destroy it whatever the wait said.
  return join(drv.check(drv.api().cuStreamSynchronize(stream_), "cuStreamSynchronize"),
              drv.check(drv.api().cuGraphExecDestroy(exec), "cuGraphExecDestroy"));
}

Result<DeviceLimits> CudaDevice::limits() const {
  const Driver& drv = *driver_;
  DeviceLimits l;
  l.driver_version = drv.version();
  auto get = [&](CUdevice_attribute attr, const char* what) -> Result<uint64_t> {
    int v = 0;
    const CUresult r = drv.api().cuDeviceGetAttribute(&v, attr, device_);
    if (r != CUDA_SUCCESS) return make_error(ErrorKind::kDevice, std::string("cuDeviceGetAttribute(") + what + "): " +
                                                                     drv.describe(r));
    return static_cast<uint64_t>(std::max(v, 0));
  };
#define KERN_ATTR(field, attr)                                 \
  do {                                                         \
    KERN_ASSIGN_OR_RETURN(uint64_t v, get(attr, #attr));       \
    field = static_cast<decltype(field)>(v);                   \
  } while (0)
  KERN_ATTR(l.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  KERN_ATTR(l.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  KERN_ATTR(l.max_threads_per_block, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  KERN_ATTR(l.max_block[0], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
  KERN_ATTR(l.max_block[1], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y);
  KERN_ATTR(l.max_block[2], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
  KERN_ATTR(l.max_grid[0], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
  KERN_ATTR(l.max_grid[1], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
  KERN_ATTR(l.max_grid[2], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
  KERN_ATTR(l.max_shared_mem_per_block, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
#undef KERN_ATTR
  return l;
}

}  // namespace kern::load::cuda
