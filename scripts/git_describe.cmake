# git_describe.cmake — run at every build: write rb_git.h with `git describe`, touching
# it only when the text changes (so provenance names the commit actually built).
execute_process(COMMAND git describe --always --dirty --tags WORKING_DIRECTORY ${SRC}
  OUTPUT_VARIABLE d OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE r)
if(NOT r EQUAL 0 OR NOT d)
  set(d "unknown")
endif()
set(text "/* rb_git.h — generated at build time by scripts/git_describe.cmake */\n#define RB_GIT_DESCRIBE \"${d}\"\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE ${OUT} "${text}")
endif()
