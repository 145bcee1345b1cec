# SPDX-License-Identifier: Apache-2.0
# The compiler holds the errc contract: a caller that drops a code does not compile.
# Compiles nodiscard_drops.cpp (syntax only) with the project's compiler and
# -Werror=unused-result: DROP=0, where every result is used, must compile (so the include
# paths and the source are sound); each DROP=n, which drops one result, must be refused, and
# for that reason (the diagnostic names unused-result), not for another error.
#   cmake -DCXX=... -DSOURCE=... -DINCLUDES="dir|dir|..." -DCASES=n -P nodiscard_contract.cmake
cmake_minimum_required(VERSION 3.25)

string(REPLACE "|" ";" include_dirs "${INCLUDES}")
set(include_flags "")
foreach(dir IN LISTS include_dirs)
  list(APPEND include_flags "-I${dir}")
endforeach()
set(compile ${CXX} -std=c++17 -fsyntax-only -Werror=unused-result ${include_flags} ${SOURCE})

execute_process(COMMAND ${compile} -DDROP=0
  RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE errors)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "the source that uses every result does not compile:\n${output}${errors}")
endif()

# CASES must count every case: the one after the last is the source's "no such case".
math(EXPR past_last "${CASES} + 1")
execute_process(COMMAND ${compile} -DDROP=${past_last}
  RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE errors)
if(status EQUAL 0 OR NOT "${output}${errors}" MATCHES "no such case")
  message(FATAL_ERROR "CASES=${CASES} does not count every case of ${SOURCE}")
endif()

set(compiled "")
foreach(n RANGE 1 ${CASES})
  execute_process(COMMAND ${compile} -DDROP=${n}
    RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE errors)
  if(status EQUAL 0)
    list(APPEND compiled ${n})
  elseif(NOT "${output}${errors}" MATCHES "unused-result")
    message(FATAL_ERROR "case ${n} failed, but not for its dropped result:\n${output}${errors}")
  else()
    message("case ${n}: refused, as it must be")
  endif()
endforeach()
if(compiled)
  message(FATAL_ERROR "these cases drop a result and still compile: ${compiled}")
endif()
