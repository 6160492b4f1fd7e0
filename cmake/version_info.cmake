# Writes OUT (a C++ source defining cuvil::build_info()) from the project version and the
# source tree's git commit at build time. Run by the cuvil_version_info target on every build;
# configure_file rewrites OUT only when its text changes, so an unchanged commit rebuilds
# nothing. Without git or outside a checkout the commit is "" (--version says unknown).
# Inputs: -DSOURCE_DIR= -DOUT= -DVERSION= -DTEMPLATE=
set(CUVIL_GIT_COMMIT "")
set(CUVIL_GIT_DIRTY "false")
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} -C ${SOURCE_DIR} rev-parse HEAD
    OUTPUT_VARIABLE commit RESULT_VARIABLE status OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(status EQUAL 0)
    set(CUVIL_GIT_COMMIT "${commit}")
    # Tracked files that differ from the commit make the build "modified".
    execute_process(COMMAND ${GIT_EXECUTABLE} -C ${SOURCE_DIR} status --porcelain
      --untracked-files=no OUTPUT_VARIABLE changes RESULT_VARIABLE status ERROR_QUIET)
    if(status EQUAL 0 AND NOT changes STREQUAL "")
      set(CUVIL_GIT_DIRTY "true")
    endif()
  endif()
endif()
set(CUVIL_VERSION "${VERSION}")
configure_file(${TEMPLATE} ${OUT} @ONLY)
