# The two commands of the README:  make run  (the window)  and  make test  (the whole suite).
# Both install missing Debian packages first, then configure and build.
BUILD ?= build
JOBS  ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: all deps configure build run test bench clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(CMAKE_ARGS)

configure: deps $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

run: build
	@if [ -z "$$DISPLAY$$WAYLAND_DISPLAY" ] && [ -z "$$QT_QPA_PLATFORM" ]; then \
	  echo "make run: no display found (DISPLAY/WAYLAND_DISPLAY unset); for a headless run use $(BUILD)/engine/paralab-run --help"; \
	  exit 1; fi
	$(BUILD)/app/paralab

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Benchmarks print tables; the PyTorch reference needs Debian's python3-torch.
bench: build
	@scripts/install-deps.sh python3-torch
	$(BUILD)/tests/bench/paralab-bench step

clean:
	rm -rf $(BUILD)
