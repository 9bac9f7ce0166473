# The two commands of the README:  make run  (the window)  and  make test  (the whole suite).
# Both install missing Debian packages first, then configure and build.
# Also: make package (the .deb), make test-minimal (Qt, QCustomPlot and a BLAS only).
BUILD ?= build
JOBS  ?= $(shell nproc)
CMAKE_ARGS ?=
# The compiler cache when there is one (make deps installs it): the package and minimal trees
# then reuse the main tree's objects. Paths under the source tree are made relative, so the
# same file compiled in two trees is the same command. Evaluated when a recipe runs, after deps.
LAUNCHER = $(if $(shell command -v ccache),-DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
  -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
export CCACHE_BASEDIR ?= $(CURDIR)

.PHONY: all deps configure build run test test-installed package test-minimal test-asan \
  test-asan-subset test-tsan bench clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(LAUNCHER) $(CMAKE_ARGS)

configure: deps $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# The window and the engine it launches for MPI runs, not the test suites.
run: configure
	cmake --build $(BUILD) -j $(JOBS) --target paralab paralab-run
	@if [ -z "$$DISPLAY$$WAYLAND_DISPLAY" ] && [ -z "$$QT_QPA_PLATFORM" ]; then \
	  echo "make run: no display found (DISPLAY/WAYLAND_DISPLAY unset); for a headless run use $(BUILD)/engine/paralab-run --help"; \
	  exit 1; fi
	$(BUILD)/app/paralab

# The whole suite; the package installed and run from /usr/bin (test-installed); then the
# communicator, strategy, session and bad-input suites again under AddressSanitizer +
# UndefinedBehaviorSanitizer (test-asan-subset).
test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	$(MAKE) --no-print-directory test-installed
	$(MAKE) --no-print-directory test-asan-subset

# [SECTION] The Debian package (cmake/Package.cmake), built in its own tree without CUDA or
# NCCL (NVIDIA's toolkit, not Debian packages: a program linked to libcudart does not start
# where it is missing), from the programs and their generated man pages only, not the tests.
PKG_BUILD = build-pkg
PKG_ARGS = -DPARALAB_WITH_CUDA=OFF -DPARALAB_WITH_NCCL=OFF -DPARALAB_WITH_GUI=ON
package: deps
	@test -f $(PKG_BUILD)/CMakeCache.txt || cmake -S . -B $(PKG_BUILD) $(PKG_ARGS) $(LAUNCHER) $(CMAKE_ARGS)
	cmake --build $(PKG_BUILD) -j $(JOBS) --target paralab paralab-run paralab-bench paralab-docs
	cd $(PKG_BUILD) && cpack -B $(abspath $(BUILD))
	@ls $(BUILD)/paralab_*.deb

# The package installed with apt-get (root or sudo) and its programs run from /usr/bin.
test-installed: package
	scripts/test-installed.sh $(BUILD)

# [SECTION] The portable floor: Qt 6, QCustomPlot and a BLAS (plus the header-only JSON and CLI
# parsers and zlib), no MPI, CUDA or NCCL; the configuration a port to another system starts
# from. Its own tree, the whole suite. Not part of `make test` (a second full build).
MIN_ARGS = -DPARALAB_WITH_MPI=OFF -DPARALAB_WITH_CUDA=OFF -DPARALAB_WITH_NCCL=OFF
test-minimal: deps
	@test -f build-minimal/CMakeCache.txt || cmake -S . -B build-minimal $(MIN_ARGS) $(LAUNCHER) $(CMAKE_ARGS)
	cmake --build build-minimal -j $(JOBS)
	cd build-minimal && ctest --output-on-failure -j $(JOBS)

# [SECTION] Sanitized builds, each in its own tree (cmake/Sanitizers.cmake; CTest timeouts scaled).
# Host C++ only: CUDA and NCCL are left out (nvcc takes no -fsanitize; the emulated GPU tests
# still run).
SAN_ARGS = -DPARALAB_WITH_CUDA=OFF -DPARALAB_WITH_NCCL=OFF \
  $(if $(shell command -v ccache),-DCMAKE_CXX_COMPILER_LAUNCHER=ccache) $(CMAKE_ARGS)

# AddressSanitizer + UndefinedBehaviorSanitizer (a finding fails the test): the whole suite,
# the window's offscreen tests and the MPI runs included. On 2 cores its build and run take
# about 40 minutes, so `make test` runs only test-asan-subset below.
build-asan/CMakeCache.txt:
	cmake -S . -B build-asan -DPARALAB_SANITIZE=address $(SAN_ARGS)

test-asan: deps build-asan/CMakeCache.txt
	cmake --build build-asan -j $(JOBS)
	# LeakSanitizer's tracer used to crash at exit in a process that passed ("Tracer caught
	# signal 11"; cmake/Sanitizers.cmake now avoids its cause). Should it happen again, only a
	# failed test whose own output shows that crash runs once more; both runs stay in the log.
	# A test that failed for any other reason fails the target at once.
	cd build-asan && (ctest --output-on-failure -j $(JOBS) || ../scripts/rerun-tracer-crashes.sh)

# What `make test` runs under ASan+UBSan: thread ranks' communicator and gradient sync, the
# strategies (synchronous ones against serial, ZeRO, tensor and pipeline, the asynchronous
# ones), the session the window drives, the bad-input fuzz, and every vector kernel at every
# level the CPU has (tst_simd_levels). The engine and these programs
# build in about ten minutes on 2 cores and run in about two.
ASAN_SUBSET = tst_comm_thread tst_grad_sync tst_parallel_equals_serial tst_zero tst_model_parallel \
  tst_async_strategies tst_session tst_fuzz tst_simd_levels
test-asan-subset: deps build-asan/CMakeCache.txt
	cmake -S . -B build-asan > /dev/null  # a tree configured before a suite joined the list knows it
	cmake --build build-asan -j $(JOBS) --target $(ASAN_SUBSET)
	cd build-asan && ctest --output-on-failure -j $(JOBS) -R '^($(subst $(space),|,$(strip $(ASAN_SUBSET))))$$'

# ThreadSanitizer: the suites whose ranks are threads (comm, strategies with Hogwild and the
# parameter server, session, pipeline, the threaded GEMM). MPI is left out: its ranks are
# processes, and OpenMPI's own threads are not instrumented.
TSAN_TESTS = tst_gemm tst_comm_thread tst_async_strategies tst_session tst_parallel_equals_serial \
  tst_model_parallel
test-tsan: deps
	@test -f build-tsan/CMakeCache.txt || cmake -S . -B build-tsan -DPARALAB_SANITIZE=thread \
	  -DPARALAB_WITH_MPI=OFF -DPARALAB_WITH_GUI=OFF $(SAN_ARGS)
	cmake --build build-tsan -j $(JOBS) --target paralab-run $(TSAN_TESTS)
	cd build-tsan && ctest --output-on-failure -j $(JOBS) -R '^($(subst $(space),|,$(strip $(TSAN_TESTS))))$$'
space := $(subst ,, )

# Benchmarks print tables; the PyTorch reference needs Debian's python3-torch.
bench: build
	@scripts/install-deps.sh python3-torch
	$(BUILD)/tests/bench/paralab-bench step

clean:
	rm -rf $(BUILD) $(PKG_BUILD) build-minimal build-asan build-tsan
