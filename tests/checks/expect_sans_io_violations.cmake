# SPDX-License-Identifier: Apache-2.0
# Runs scripts/check-sans-io.sh on the bad fixture library and requires that it fails the way
# it should: exit status 1 (violations; 2 would be a usage or tool error) and one report line
# for each category the fixture breaks.
#   cmake -DCHECK=... -DNM=... -DLIBRARY=... -P expect_sans_io_violations.cmake
cmake_minimum_required(VERSION 3.25)

execute_process(
  COMMAND ${CMAKE_COMMAND} -E env NM=${NM} ${CHECK} ${LIBRARY}
  RESULT_VARIABLE status
  OUTPUT_VARIABLE output
  ERROR_VARIABLE errors)
message("${output}${errors}")

if(NOT status EQUAL 1)
  message(FATAL_ERROR "expected exit status 1 (violations found), got '${status}'")
endif()

set(missing "")
foreach(expected
    "heap: +needs malloc"
    "heap: +needs free"
    "heap: +needs _Znwm|heap: +needs _Znwj"
    "exceptions: +needs __cxa_throw"
    "rtti: +needs __dynamic_cast"
    "io/syscalls: +needs printf|io/syscalls: +needs puts"
    "io/syscalls: +needs socket"
    "clocks: +needs clock_gettime"
    "threads: +needs pthread_self")
  if(NOT output MATCHES "${expected}")
    list(APPEND missing "${expected}")
  endif()
endforeach()
if(missing)
  message(FATAL_ERROR "the check did not report: ${missing}")
endif()
