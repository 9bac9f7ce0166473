# `paralab-bench comm` (included from tests/bench/CMakeLists.txt): collective bandwidth per
# backend and algorithm. MPI comes with paralab_engine when it was found.
target_sources(paralab-bench PRIVATE ${CMAKE_CURRENT_LIST_DIR}/bench_comm.cpp
  ${CMAKE_CURRENT_LIST_DIR}/bench_comm_bare.cpp)
