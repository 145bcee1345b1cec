# edgelock_runnable(<var> <target>): sets <var> to a path that runs the executable <target>
# on the build machine, for tests that start a built program themselves (fork + exec).
#
# Natively that is the target's own file. When cross-compiling, the kernel cannot exec a
# foreign binary (no binfmt_misc here), so it is a generated shell script that execs
# CMAKE_CROSSCOMPILING_EMULATOR with the target file and the script's arguments. The
# script execs, so the process the test starts, signals and waits for is the emulator
# running the program.
function(edgelock_runnable var target)
  if(NOT CMAKE_CROSSCOMPILING OR NOT CMAKE_CROSSCOMPILING_EMULATOR)
    set(${var} "$<TARGET_FILE:${target}>" PARENT_SCOPE)
    return()
  endif()
  set(words)
  foreach(word IN LISTS CMAKE_CROSSCOMPILING_EMULATOR)
    string(APPEND words " '${word}'")
  endforeach()
  set(script ${CMAKE_CURRENT_BINARY_DIR}/${target}-emulated.sh)
  file(GENERATE OUTPUT ${script}
    CONTENT "#!/bin/sh\nexec${words} '$<TARGET_FILE:${target}>' \"$@\"\n"
    FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
      WORLD_READ WORLD_EXECUTE)
  set(${var} ${script} PARENT_SCOPE)
endfunction()
