# Communicator tests (included from tests/engine/CMakeLists.txt). Each stays short: the whole
# comm suite takes seconds on 2 cores.
paralab_add_test(tst_comm_thread tst_comm_thread.cpp paralab_engine)
paralab_add_test(tst_comm_tiers tst_comm_tiers.cpp paralab_engine)
set_tests_properties(tst_comm_thread PROPERTIES TIMEOUT 300)

if(PARALAB_HAVE_MPI AND MPIEXEC_EXECUTABLE)
  # Root may run mpirun here (containers, CI); --oversubscribe lets 4 ranks share 2 cores.
  set(_mpi_env "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;QT_QPA_PLATFORM=offscreen")
  set(_mpirun ${MPIEXEC_EXECUTABLE} --oversubscribe)

  add_executable(tst_comm_mpi tst_comm_mpi.cpp)
  target_link_libraries(tst_comm_mpi PRIVATE Qt6::Test paralab_engine paralab_engine_internal)
  set_target_properties(tst_comm_mpi PROPERTIES AUTOMOC ON)
  foreach(np 2 4)
    add_test(NAME tst_comm_mpi_np${np} COMMAND ${_mpirun} -np ${np} $<TARGET_FILE:tst_comm_mpi>)
    set_tests_properties(tst_comm_mpi_np${np} PROPERTIES ENVIRONMENT "${_mpi_env}" TIMEOUT 300)
  endforeach()

  # Fault paths end the job with a message; the test passes on the message.
  add_executable(tst_comm_mpi_faults tst_comm_mpi_faults.cpp)
  target_link_libraries(tst_comm_mpi_faults PRIVATE paralab_engine paralab_engine_internal)
  foreach(mode timeout abort recorder)
    add_test(NAME tst_comm_mpi_${mode}
             COMMAND ${_mpirun} -np 2 $<TARGET_FILE:tst_comm_mpi_faults> ${mode})
    set_tests_properties(tst_comm_mpi_${mode} PROPERTIES ENVIRONMENT "${_mpi_env}" TIMEOUT 60)
  endforeach()
  set_tests_properties(tst_comm_mpi_timeout PROPERTIES
    PASS_REGULAR_EXPRESSION "allreduce mpi on group 'world' timed out after 1 s")
  # The waiting rank's recorder: its all-reduce #2 issued, never done.
  set_tests_properties(tst_comm_mpi_recorder PROPERTIES PASS_REGULAR_EXPRESSION
    "flight recorder of world rank 0: [^\n]*\"op\":\"allreduce\",\"purpose\":\"\",\"seq\":2,\"state\":\"issued\"")
  set_tests_properties(tst_comm_mpi_abort PROPERTIES
    PASS_REGULAR_EXPRESSION "world rank 1 aborted the job: boom in backward")
endif()

# NcclComm: compiled wherever NCCL is; its rows skip without enough GPUs.
paralab_add_test(tst_comm_nccl tst_comm_nccl.cpp paralab_engine)
