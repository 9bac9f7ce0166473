// Must not compile: parallel/strategy.h is private to the engine (tests/app/door.cmake,
// tst_door_refuses_private_engine_header).
#include "parallel/strategy.h"
