# Finds what ParaLab builds against and sets PARALAB_HAVE_{CUDA,MPI,NCCL,GUI}.
# Required everywhere: OpenBLAS (CBLAS), nlohmann-json, CLI11, zlib, Threads.

find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(CLI11 REQUIRED)

# OpenBLAS: Debian ships cblas.h under /usr/include/<triplet>/ through alternatives.
find_path(OPENBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas x86_64-linux-gnu/openblas-pthread)
find_library(OPENBLAS_LIBRARY NAMES openblas)
if(NOT OPENBLAS_INCLUDE_DIR OR NOT OPENBLAS_LIBRARY)
  message(FATAL_ERROR "OpenBLAS not found: install libopenblas-dev (make deps does it)")
endif()
add_library(paralab_openblas INTERFACE)
target_include_directories(paralab_openblas INTERFACE ${OPENBLAS_INCLUDE_DIR})
target_link_libraries(paralab_openblas INTERFACE ${OPENBLAS_LIBRARY})

# Resolves an AUTO|ON|OFF option: sets OUT to TRUE when FOUND and wanted; fails when ON but not found.
function(paralab_resolve option found out)
  if(${option} STREQUAL "OFF")
    set(${out} FALSE PARENT_SCOPE)
  elseif(${found})
    set(${out} TRUE PARENT_SCOPE)
  elseif(${option} STREQUAL "ON")
    message(FATAL_ERROR "${option} requested but not found")
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()

# CUDA: compiled whenever nvcc is present, also on machines without a GPU. We link the
# runtime (libcudart) and cuBLAS only, never the driver library, so binaries start where no
# driver is installed and report "no GPU" at run time.
set(_cuda_found FALSE)
if(NOT PARALAB_WITH_CUDA STREQUAL "OFF")
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80;90)
    endif()
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    # CMake 3.25 knows no C++20 dialect flag for nvcc: CUDA sources are C++17.
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(_cuda_found TRUE)
  endif()
endif()
paralab_resolve(PARALAB_WITH_CUDA _cuda_found PARALAB_HAVE_CUDA)

# NCCL has no CMake package: find the header and library, make an imported target.
set(_nccl_found FALSE)
if(PARALAB_HAVE_CUDA AND NOT PARALAB_WITH_NCCL STREQUAL "OFF")
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  find_library(NCCL_LIBRARY NAMES nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    add_library(paralab::nccl UNKNOWN IMPORTED)
    set_target_properties(paralab::nccl PROPERTIES
      IMPORTED_LOCATION ${NCCL_LIBRARY} INTERFACE_INCLUDE_DIRECTORIES ${NCCL_INCLUDE_DIR})
    set(_nccl_found TRUE)
  endif()
endif()
paralab_resolve(PARALAB_WITH_NCCL _nccl_found PARALAB_HAVE_NCCL)

set(_mpi_found FALSE)
if(NOT PARALAB_WITH_MPI STREQUAL "OFF")
  find_package(MPI COMPONENTS CXX QUIET)
  if(MPI_CXX_FOUND)
    set(_mpi_found TRUE)
  endif()
endif()
paralab_resolve(PARALAB_WITH_MPI _mpi_found PARALAB_HAVE_MPI)
if(PARALAB_HAVE_MPI)
  find_program(MPIEXEC_EXECUTABLE NAMES mpirun mpiexec)
endif()

# Qt first, then QCustomPlot's Qt 6 build (its config expects Qt6 to be found).
set(_gui_found FALSE)
if(NOT PARALAB_WITH_GUI STREQUAL "OFF")
  find_package(Qt6 COMPONENTS Core Gui Widgets Svg PrintSupport Test QUIET)
  if(Qt6_FOUND)
    find_package(QCustomPlotQt6 QUIET)
    if(QCustomPlotQt6_FOUND)
      set(_gui_found TRUE)
    endif()
  endif()
endif()
paralab_resolve(PARALAB_WITH_GUI _gui_found PARALAB_HAVE_GUI)
# The tests are Qt Test executables: QtTest (QtCore only) is needed even without widgets.
find_package(Qt6 COMPONENTS Core Test REQUIRED)
