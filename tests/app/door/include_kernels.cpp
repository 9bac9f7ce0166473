// Must not compile: kernels/ is below the engine, out of the window's reach
// (tests/app/door.cmake, tst_door_refuses_kernels_header).
#include "cuda/device.h"
