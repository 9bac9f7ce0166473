# Sources of engine/comm, added to paralab_engine_objects (included from engine/CMakeLists.txt).
# ThreadComm is always built; MpiComm and NcclComm when OpenMPI / NCCL were found (their
# factories throw a clear CommError otherwise).
target_sources(paralab_engine_objects PRIVATE
  comm/communicator.cpp
  comm/flight_recorder.cpp
  comm/comm_accounting.cpp
  comm/link_model.cpp
  comm/comm_thread.cpp
  comm/thread_group.cpp
  comm/thread_allreduce.cpp
  comm/hierarchical_allreduce.cpp
  comm/comm_mpi.cpp
  comm/comm_nccl.cpp
)
if(PARALAB_HAVE_MPI)
  target_link_libraries(paralab_engine_objects PUBLIC MPI::MPI_CXX)
  target_compile_definitions(paralab_engine_objects PUBLIC PARALAB_HAVE_MPI=1)
endif()
# Only comm_nccl.cpp includes NCCL and CUDA: the other engine files compile alike with and
# without them, so a build without CUDA (make package, make test-minimal) reuses their objects
# from the compiler cache.
if(PARALAB_HAVE_NCCL)
  target_link_libraries(paralab_engine_objects  # comm_nccl.cpp calls both
    INTERFACE $<LINK_ONLY:paralab::nccl> $<LINK_ONLY:CUDA::cudart>)
  set_property(SOURCE comm/comm_nccl.cpp APPEND PROPERTY COMPILE_DEFINITIONS PARALAB_HAVE_NCCL=1)
  set_property(SOURCE comm/comm_nccl.cpp APPEND PROPERTY INCLUDE_DIRECTORIES
    ${NCCL_INCLUDE_DIR} ${CUDAToolkit_INCLUDE_DIRS})
endif()
