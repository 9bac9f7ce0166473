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
  comm/comm_mpi.cpp
  comm/comm_nccl.cpp
)
# Link profiles live in resources/links; $PARALAB_RESOURCES_DIR overrides at run time.
set_source_files_properties(comm/link_model.cpp PROPERTIES
  COMPILE_DEFINITIONS PARALAB_RESOURCES_DIR="${PROJECT_SOURCE_DIR}/resources")
if(PARALAB_HAVE_MPI)
  target_link_libraries(paralab_engine_objects PUBLIC MPI::MPI_CXX)
  target_compile_definitions(paralab_engine_objects PUBLIC PARALAB_HAVE_MPI=1)
endif()
if(PARALAB_HAVE_NCCL)
  target_link_libraries(paralab_engine_objects PUBLIC paralab::nccl CUDA::cudart)  # comm_nccl.cpp calls both
  target_compile_definitions(paralab_engine_objects PUBLIC PARALAB_HAVE_NCCL=1)
endif()
