// Built instead of reduce.cu when ParaLab is configured without CUDA: the communicators' device
// path reports that it is not there (see reduce.h).
#include <stdexcept>

#include "cuda/reduce.h"

namespace paralab::kernels {

[[noreturn]] static void noCuda() {
  throw std::runtime_error("device buffers need CUDA: ParaLab was built without CUDA");
}

void reduce_device(float*, const float* const*, int, int64_t, DeviceReduce, float, void*) {
  noCuda();
}
void reduce_device_copy(void*, const void*, int64_t, void*) { noCuda(); }
void* reduce_stream_create() { noCuda(); }
void reduce_stream_destroy(void*) {}
void reduce_stream_sync(void*) { noCuda(); }
bool reduce_stream_query(void*) { noCuda(); }
void* reduce_device_alloc(int64_t) { noCuda(); }
void reduce_device_free(void*) {}
int reduce_current_device() { noCuda(); }
void reduce_set_device(int) { noCuda(); }

}  // namespace paralab::kernels
