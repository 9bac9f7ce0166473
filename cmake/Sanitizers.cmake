# PARALAB_SANITIZE=address|thread: the whole build instrumented (`make test-asan`, `make test-tsan`).
# address is AddressSanitizer + UndefinedBehaviorSanitizer with -fno-sanitize-recover, so any
# finding ends the test program with a non-zero status and CTest reports the test failed.
# Only C++ is instrumented: nvcc cannot take -fsanitize, so .cu files compile without it.
set(PARALAB_SANITIZE "" CACHE STRING "Instrument the build: address (ASan+UBSan), thread (TSan) or empty")
set_property(CACHE PARALAB_SANITIZE PROPERTY STRINGS "" address thread)

# CTest timeouts are multiplied by this in sanitized builds (paralab_scale_test_timeouts):
# ASan+UBSan runs about 2x slower here, TSan 5-15x.
set(PARALAB_SANITIZE_TIMEOUT_FACTOR 1)

if(PARALAB_SANITIZE STREQUAL "address")
  set(_flags -fsanitize=address,undefined -fno-sanitize-recover=undefined)
  set(PARALAB_SANITIZE_TIMEOUT_FACTOR 3)
elseif(PARALAB_SANITIZE STREQUAL "thread")
  set(_flags -fsanitize=thread)
  set(PARALAB_SANITIZE_TIMEOUT_FACTOR 10)
elseif(NOT PARALAB_SANITIZE STREQUAL "")
  message(FATAL_ERROR "PARALAB_SANITIZE is '${PARALAB_SANITIZE}'; allowed: address, thread or empty")
endif()

if(_flags)
  # Frame pointers for whole stacks in every report; -g1 (line tables) names file:line cheaply.
  list(APPEND _flags -fno-omit-frame-pointer -g1)
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${_flags}>")
  add_link_options("$<$<LINK_LANGUAGE:CXX>:${_flags}>")
endif()

# The runtime options every sanitized test runs with (also in programs it starts: paralab-run
# under QProcess or mpirun inherits them). Suppressions name third-party libraries only; the
# files say why for each.
set(_supp ${PROJECT_SOURCE_DIR}/tests/sanitizers)
# Tests with time bounds (tst_session) stretch them by the same factor as the timeouts.
set(PARALAB_SANITIZE_ENV "PARALAB_TEST_TIME_SCALE=${PARALAB_SANITIZE_TIMEOUT_FACTOR}")
# Qt Test's own watchdog (300 s per test function) stretched the same way.
math(EXPR _qt_timeout_ms "300000 * ${PARALAB_SANITIZE_TIMEOUT_FACTOR}")
list(APPEND PARALAB_SANITIZE_ENV "QTEST_FUNCTION_TIMEOUT=${_qt_timeout_ms}")
if(PARALAB_SANITIZE STREQUAL "address")
  # detect_stack_use_after_return works with the emulated GPU's fibres because each switch tells
  # ASan which stack it moves to (kernels/cuda/host/fiber.h).
  # intercept_tls_get_addr=0: this LeakSanitizer (GCC 12's) misreads glibc's dynamic TLS
  # vector once some libraries are loaded at run time (a block "at 0x3b40", 32 GiB long), and
  # its tracer crashes at exit ("Tracer caught signal 11") after every test passed. Without the
  # interception it still scans static TLS and every thread's stack; tst_charts_runs, which
  # crashed so on each run, then passes with no leak reported.
  set(_asan "detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1")
  string(APPEND _asan ":intercept_tls_get_addr=0")
  # Tests that start mpirun: Open MPI's leaks are suppressed by library (lsan.supp), which needs
  # whole allocation stacks; its code keeps no frame pointers, so those take the slow unwinder.
  set(PARALAB_SANITIZE_MPI_ENV "ASAN_OPTIONS=${_asan}:fast_unwind_on_malloc=0")
  list(APPEND PARALAB_SANITIZE_ENV
    "ASAN_OPTIONS=${_asan}"
    "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1"
    "LSAN_OPTIONS=suppressions=${_supp}/lsan.supp:print_suppressions=0")
elseif(PARALAB_SANITIZE STREQUAL "thread")
  list(APPEND PARALAB_SANITIZE_ENV
    "TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=${_supp}/tsan.supp"
    # OpenBLAS's own worker threads are not instrumented: one BLAS thread per process.
    "OPENBLAS_NUM_THREADS=1" "OMP_NUM_THREADS=1")
endif()

# paralab_sanitize_tests(): in a sanitized build, each test of the current directory gets its
# TIMEOUT (CTest's 1500 s when unset) times PARALAB_SANITIZE_TIMEOUT_FACTOR and the sanitizer
# options. paralab_add_test defers it to the end of its directory, so tests added after it count.
function(paralab_sanitize_tests)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(test IN LISTS tests)
    get_test_property(${test} TIMEOUT timeout)
    if(NOT timeout)
      set(timeout 1500)
    endif()
    math(EXPR timeout "${timeout} * ${PARALAB_SANITIZE_TIMEOUT_FACTOR}")
    set_property(TEST ${test} PROPERTY TIMEOUT ${timeout})
    set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT ${PARALAB_SANITIZE_ENV})
    get_test_property(${test} ENVIRONMENT env)
    if(PARALAB_SANITIZE_MPI_ENV AND env MATCHES "OMPI_ALLOW_RUN_AS_ROOT")  # it runs mpirun
      set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT ${PARALAB_SANITIZE_MPI_ENV})
    endif()
  endforeach()
endfunction()
