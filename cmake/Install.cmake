# What `make install` and the .deb (cmake/Package.cmake) put where, under CMAKE_INSTALL_PREFIX:
# bin/paralab, paralab-run, paralab-bench; share/paralab/lessons and resources/{links,gpus,bench} (read
# at run time through dataDir, engine/api/platform.h); the menu entry, icon, AppStream metainfo,
# a man page per program and the Debian copyright and changelog. See scripts/test-installed.sh.

set(PARALAB_PROGRAMS paralab-run paralab-bench)
if(PARALAB_HAVE_GUI)
  list(PREPEND PARALAB_PROGRAMS paralab)
endif()
install(TARGETS ${PARALAB_PROGRAMS} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The data the programs read: the lessons, the link and GPU tables of the projection, and the
# PyTorch reference scripts paralab-bench runs beside its own step.
set(PARALAB_DATA_DESTINATION ${CMAKE_INSTALL_DATADIR}/paralab)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/lessons DESTINATION ${PARALAB_DATA_DESTINATION}
        PATTERN README.md EXCLUDE)  # how lessons are written: for authors, not read at run time
install(DIRECTORY ${PROJECT_SOURCE_DIR}/resources/links ${PROJECT_SOURCE_DIR}/resources/gpus
                  ${PROJECT_SOURCE_DIR}/resources/bench
        DESTINATION ${PARALAB_DATA_DESTINATION}/resources)

# A desktop application: its menu entry, its icon in the hicolor theme (the entry's
# Icon=paralab), and its AppStream description (software centres list it from there).
if(PARALAB_HAVE_GUI)
  install(FILES ${PROJECT_SOURCE_DIR}/resources/paralab.desktop
          DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
  install(FILES ${PROJECT_SOURCE_DIR}/resources/icons/paralab.svg
          DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps)
  configure_file(${PROJECT_SOURCE_DIR}/resources/org.paralab.ParaLab.metainfo.xml.in
                 ${PROJECT_BINARY_DIR}/package/org.paralab.ParaLab.metainfo.xml @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/package/org.paralab.ParaLab.metainfo.xml
          DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo)
endif()

# [SECTION] Generated documents (target paralab-docs, which `make package` builds).
# The man pages are help2man's reading of each program's --help and --version: the help is the
# settings schema's (engine/schema.h), so the pages are never written by hand. gzip -n: no
# time stamp, so the same sources give the same package.
find_program(HELP2MAN_EXECUTABLE help2man)
find_program(GZIP_EXECUTABLE gzip REQUIRED)
set(_docs ${PROJECT_BINARY_DIR}/package)
set(_summary_paralab "the ParaLab window: a lab for parallel neural-network training")
set(_summary_paralab-run "train a ParaLab run headless and print its measurements")
set(_summary_paralab-bench "ParaLab's benchmarks, each against a reference")
set(_outputs)
if(HELP2MAN_EXECUTABLE)
  foreach(program IN LISTS PARALAB_PROGRAMS)
    set(page ${_docs}/${program}.1)
    add_custom_command(OUTPUT ${page}.gz
      COMMAND ${CMAKE_COMMAND} -E env QT_QPA_PLATFORM=offscreen PARALAB_KEEP_BLAS_CORETYPE=1
              ${HELP2MAN_EXECUTABLE} --no-info --no-discard-stderr --section=1
              "--name=${_summary_${program}}" --output=${page} $<TARGET_FILE:${program}>
      COMMAND ${GZIP_EXECUTABLE} -9nf ${page}
      DEPENDS ${program} VERBATIM
      COMMENT "Generating the man page of ${program} from its --help")
    list(APPEND _outputs ${page}.gz)
    install(FILES ${page}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 OPTIONAL)
  endforeach()
else()
  message(STATUS "help2man not found: no man pages (make deps installs it)")
endif()

# Debian's own: the copyright file, and the changelog of a native package.
configure_file(${PROJECT_SOURCE_DIR}/resources/debian/changelog.in ${_docs}/changelog @ONLY)
add_custom_command(OUTPUT ${_docs}/changelog.gz
  COMMAND ${GZIP_EXECUTABLE} -9nkf ${_docs}/changelog
  DEPENDS ${_docs}/changelog ${PROJECT_SOURCE_DIR}/resources/debian/changelog.in VERBATIM)
list(APPEND _outputs ${_docs}/changelog.gz)
add_custom_target(paralab-docs DEPENDS ${_outputs})
install(FILES ${PROJECT_SOURCE_DIR}/resources/debian/copyright ${_docs}/changelog.gz
        DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/paralab OPTIONAL)  # the package's name
