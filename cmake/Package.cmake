# The Debian package: `make package` configures build-pkg without CUDA and NCCL (the runtime,
# cuBLAS and NCCL the build links come with NVIDIA's toolkit, not from Debian, and a program
# linked to libcudart does not start where it is missing), builds the programs and paralab-docs,
# and runs cpack, which writes build/paralab_<version>_<arch>.deb.
# See scripts/test-installed.sh (make test installs it with apt-get and runs it from /usr/bin).

# cpack (and `cmake --build . --target install`) installs what is built, without building the
# whole tree first: the package needs the programs and paralab-docs, not the test suites.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY TRUE)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME paralab)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "ParaLab")
set(CPACK_PACKAGE_CONTACT "ParaLab developers <paralab@example.org>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "desktop lab for learning parallel neural-network training")
# The extended description, wrapped as Debian shows it (lines under 80 columns).
string(JOIN "\n" CPACK_PACKAGE_DESCRIPTION
  "ParaLab trains small networks (an MLP, a mixture of experts, a GPT) on this"
  "machine's cores with data, tensor, pipeline, expert and context parallelism,"
  "and draws what each strategy costs as it runs: loss, throughput, speedup"
  "against Amdahl and Gustafson, memory per rank, communication and a timeline."
  "Lessons walk through each idea with experiments the learner runs."
  ""
  "It contains the window (paralab), the headless engine (paralab-run) and the"
  "benchmarks (paralab-bench). Runs across processes use OpenMPI's mpirun.")
set(CPACK_STRIP_FILES TRUE)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# 0755 directories, as Debian's policy has them (lintian: non-standard-dir-perm).
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
  OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # paralab_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
# The libraries the programs link (Qt 6, QCustomPlot, OpenBLAS, OpenMPI, zlib): dpkg-shlibdeps
# reads them from the binaries (libqt6svg6 among them, which also holds the SVG icon plugins).
# Then what they read or run without linking it: the default data set (Fashion-MNIST), the
# GPT's corpus (fortunes), a font for the charts' text, and mpirun for runs across processes.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(_depends "dataset-fashion-mnist, fortunes, fonts-dejavu-core")
if(PARALAB_HAVE_MPI)
  string(APPEND _depends ", openmpi-bin")
endif()
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${_depends}")
include(CPack)
