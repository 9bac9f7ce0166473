# The door, checked: a file compiled with exactly the include paths an app/ file gets (linking
# paralab_app) reaches the engine's public headers (engine/api) and nothing else. Each probe is
# a target outside `all`; its test builds it. A refusal passes only on the compiler's "no such
# header" for the header named (GCC's and Clang's wording), so a probe broken another way fails.
include_guard()
function(paralab_door_probe name source refused)
  add_library(door_${name} OBJECT EXCLUDE_FROM_ALL ${CMAKE_CURRENT_SOURCE_DIR}/door/${source})
  target_link_libraries(door_${name} PRIVATE paralab_app)
  add_test(NAME tst_door_${name}
           COMMAND ${CMAKE_COMMAND} --build ${PROJECT_BINARY_DIR} --target door_${name})
  set_tests_properties(tst_door_${name} PROPERTIES LABELS app TIMEOUT 300)
  if(refused)
    string(REPLACE "." "\\." header "${refused}")
    set_tests_properties(tst_door_${name} PROPERTIES PASS_REGULAR_EXPRESSION
      "${header}'?:? (No such file or directory|file not found)")
  endif()
endfunction()
paralab_door_probe(opens_public_api include_api.cpp "")
paralab_door_probe(refuses_private_engine_header include_strategy.cpp "parallel/strategy.h")
paralab_door_probe(refuses_kernels_header include_kernels.cpp "cuda/device.h")
