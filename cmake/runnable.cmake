# SPDX-License-Identifier: Apache-2.0
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
  set(script ${CMAKE_CURRENT_BINARY_DIR}/${target}-emulated.sh)
  edgelock_emulated_script(${script} "$<TARGET_FILE:${target}>")
  set(${var} ${script} PARENT_SCOPE)
endfunction()

# edgelock_runnable_beside(<var> <target> <helper>): as edgelock_runnable, for a program
# that finds the executable <helper> in its own directory and execs it (edgelock runs
# edgelock-sim so). Also makes the target <target>_runnable, which the tests depend on.
#
# Natively <var> is the target's own file, whose directory holds <helper> (the build links
# it there). When cross-compiling, the emulated program would exec the foreign <helper>
# itself, and the kernel refuses it. So <target> is copied into a directory of its own, next
# to a script named <helper> that runs the real <helper> under the emulator, and <var> runs
# the copy under the emulator: qemu-user reports the copy's path as /proc/self/exe (a
# symlink would be resolved to the original), so the program finds and execs the script.
function(edgelock_runnable_beside var target helper)
  if(NOT CMAKE_CROSSCOMPILING OR NOT CMAKE_CROSSCOMPILING_EMULATOR)
    add_custom_target(${target}_runnable DEPENDS ${target} ${helper})
    set(${var} "$<TARGET_FILE:${target}>" PARENT_SCOPE)
    return()
  endif()
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/${target}-beside-emulated-${helper})
  edgelock_emulated_script(${dir}/${helper} "$<TARGET_FILE:${helper}>")
  add_custom_command(OUTPUT ${dir}/${target}
    COMMAND ${CMAKE_COMMAND} -E copy $<TARGET_FILE:${target}> ${dir}/${target}
    DEPENDS ${target}
    VERBATIM)
  add_custom_target(${target}_runnable DEPENDS ${dir}/${target} ${helper})
  set(script ${CMAKE_CURRENT_BINARY_DIR}/${target}-emulated.sh)
  edgelock_emulated_script(${script} ${dir}/${target})
  set(${var} ${script} PARENT_SCOPE)
endfunction()

# Writes an executable shell script at <path> that execs the emulator with <program> and the
# script's arguments.
function(edgelock_emulated_script path program)
  set(words)
  foreach(word IN LISTS CMAKE_CROSSCOMPILING_EMULATOR)
    string(APPEND words " '${word}'")
  endforeach()
  file(GENERATE OUTPUT ${path}
    CONTENT "#!/bin/sh\nexec${words} '${program}' \"$@\"\n"
    FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
      WORLD_READ WORLD_EXECUTE)
endfunction()
