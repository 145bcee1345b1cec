# SPDX-License-Identifier: Apache-2.0
# Checks that every translation unit of the core is compiled with -fno-exceptions and
# -fno-rtti, reading the build's compile_commands.json.
#
#   cmake -DCOMPILE_COMMANDS=build/compile_commands.json -DSOURCE_DIR=core/src \
#         -P scripts/check-compile-flags.cmake
#
# Every *.cpp under SOURCE_DIR must have an entry (a source the build does not compile is
# reported, since its flags cannot be shown), and in each entry the last of
# -fexceptions/-fno-exceptions and of -frtti/-fno-rtti must be the -fno- form, because the
# compiler obeys the last one.
cmake_minimum_required(VERSION 3.25)

foreach(variable COMPILE_COMMANDS SOURCE_DIR)
  if(NOT DEFINED ${variable})
    message(FATAL_ERROR "check-compile-flags: -D${variable}=... is required")
  endif()
endforeach()
if(NOT EXISTS "${COMPILE_COMMANDS}")
  message(FATAL_ERROR "check-compile-flags: no ${COMPILE_COMMANDS} "
    "(configure with CMAKE_EXPORT_COMPILE_COMMANDS=ON)")
endif()

file(REAL_PATH "${SOURCE_DIR}" source_dir)
file(GLOB sources LIST_DIRECTORIES false "${source_dir}/*.cpp")
if(NOT sources)
  message(FATAL_ERROR "check-compile-flags: no *.cpp in ${source_dir}")
endif()

file(READ "${COMPILE_COMMANDS}" database)
string(JSON entries LENGTH "${database}")

# The flags of one entry as a list: "arguments" (an array) or "command" (one string).
function(entry_flags index out)
  string(JSON arguments ERROR_VARIABLE no_arguments GET "${database}" ${index} arguments)
  if(no_arguments)
    string(JSON command GET "${database}" ${index} command)
    separate_arguments(flags UNIX_COMMAND "${command}")
  else()
    string(JSON count LENGTH "${database}" ${index} arguments)
    set(flags "")
    math(EXPR last "${count} - 1")
    foreach(i RANGE ${last})
      string(JSON argument GET "${database}" ${index} arguments ${i})
      list(APPEND flags "${argument}")
    endforeach()
  endif()
  set(${out} "${flags}" PARENT_SCOPE)
endfunction()

# The last of the flags matching `pattern`, or "" when none does.
function(last_matching flags pattern out)
  set(found "")
  foreach(flag IN LISTS flags)
    if(flag MATCHES "${pattern}")
      set(found "${flag}")
    endif()
  endforeach()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

set(failures 0)
set(checked 0)
foreach(source IN LISTS sources)
  set(matched FALSE)
  math(EXPR last "${entries} - 1")
  foreach(index RANGE ${last})
    string(JSON file GET "${database}" ${index} file)
    string(JSON directory GET "${database}" ${index} directory)
    cmake_path(ABSOLUTE_PATH file BASE_DIRECTORY "${directory}" NORMALIZE)
    if(EXISTS "${file}")
      file(REAL_PATH "${file}" file)
    endif()
    if(NOT file STREQUAL source)
      continue()
    endif()
    set(matched TRUE)
    math(EXPR checked "${checked} + 1")
    entry_flags(${index} flags)
    last_matching("${flags}" "^-f(no-)?exceptions$" exceptions)
    last_matching("${flags}" "^-f(no-)?rtti$" rtti)
    if(NOT exceptions STREQUAL "-fno-exceptions" OR NOT rtti STREQUAL "-fno-rtti")
      message("FAIL ${source}: exceptions flag '${exceptions}', rtti flag '${rtti}'")
      math(EXPR failures "${failures} + 1")
    else()
      message("ok   ${source}")
    endif()
  endforeach()
  if(NOT matched)
    message("FAIL ${source}: not in ${COMPILE_COMMANDS} (not compiled by the build)")
    math(EXPR failures "${failures} + 1")
  endif()
endforeach()

if(failures GREATER 0)
  message(FATAL_ERROR "check-compile-flags: ${failures} problem(s) in ${source_dir}")
endif()
message("check-compile-flags: ${checked} translation unit(s) in ${source_dir} "
  "compiled with -fno-exceptions -fno-rtti")
