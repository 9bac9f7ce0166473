# Sources of engine/comm, added to paralab_engine (included from engine/CMakeLists.txt).
target_sources(paralab_engine PRIVATE
  comm/communicator.cpp
  comm/comm_accounting.cpp
  comm/link_model.cpp
  comm/comm_thread.cpp
  comm/thread_allreduce.cpp
)
# Link profiles live in resources/links; $PARALAB_RESOURCES_DIR overrides at run time.
set_source_files_properties(comm/link_model.cpp PROPERTIES
  COMPILE_DEFINITIONS PARALAB_RESOURCES_DIR="${PROJECT_SOURCE_DIR}/resources")
