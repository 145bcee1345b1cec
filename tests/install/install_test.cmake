# SPDX-License-Identifier: Apache-2.0
# The install test: does `cmake --install` produce a package a separate project can use?
#
#   1. install BUILD_DIR into WORK_DIR/staged, then move it to WORK_DIR/prefix: a path baked
#      into the package (instead of one relative to it) then points nowhere
#   2. refuse an export file that names the source or build tree; the pkg-config files must
#      name the prefix installed to
#   3. configure CONSUMER_DIR against the prefix alone (no package registries) and check that
#      edgelock_DIR resolved inside it
#   4. build the consumer and run it: it checks real behaviour of the installed library
cmake_minimum_required(VERSION 3.25)

foreach(variable BUILD_DIR SOURCE_DIR CONSUMER_DIR WORK_DIR GENERATOR CXX_COMPILER
    EDGELOCK_VERSION)
  if(NOT DEFINED ${variable})
    message(FATAL_ERROR "install_test: -D${variable}=... is required")
  endif()
endforeach()
if(NOT CONFIG)
  set(CONFIG RelWithDebInfo)
endif()

# Runs a command, echoing it; stops the test with its output when it fails.
function(run)
  string(REPLACE ";" " " shown "${ARGN}")
  message("install_test: ${shown}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE output
    ERROR_VARIABLE output)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "install_test: failed (${status}):\n${output}")
  endif()
  set(run_output "${output}" PARENT_SCOPE)
endfunction()

set(staged ${WORK_DIR}/staged)
set(prefix ${WORK_DIR}/prefix)
set(consumer_build ${WORK_DIR}/consumer-build)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${staged} --config ${CONFIG})

# The pkg-config files name the prefix installed to (absolute, as distributions' do), not
# the one the build was configured with.
file(GLOB_RECURSE pc_files ${staged}/*/pkgconfig/edgelock-*.pc)
if(NOT pc_files)
  message(FATAL_ERROR "install_test: no pkg-config files under ${staged}")
endif()
foreach(pc_file IN LISTS pc_files)
  file(STRINGS ${pc_file} pc_prefix REGEX "^prefix=")
  if(NOT pc_prefix STREQUAL "prefix=${staged}")
    message(FATAL_ERROR "install_test: ${pc_file} says '${pc_prefix}', not prefix=${staged}")
  endif()
endforeach()
file(RENAME ${staged} ${prefix})

file(GLOB_RECURSE package_files ${prefix}/*/cmake/edgelock/*.cmake)
if(NOT package_files)
  message(FATAL_ERROR "install_test: no CMake package files under ${prefix}")
endif()
foreach(package_file IN LISTS package_files)
  file(READ ${package_file} text)
  foreach(tree ${SOURCE_DIR} ${BUILD_DIR} ${staged})
    string(FIND "${text}" "${tree}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "install_test: ${package_file} names ${tree}")
    endif()
  endforeach()
endforeach()

set(toolchain)
if(TOOLCHAIN_FILE)
  set(toolchain -DCMAKE_TOOLCHAIN_FILE=${TOOLCHAIN_FILE})
endif()
string(REPLACE "|" ";" emulator "${EMULATOR}")
set(openssl)
if(OPENSSL_INCLUDE)
  set(openssl -DOPENSSL_INCLUDE_DIR=${OPENSSL_INCLUDE} -DOPENSSL_SSL_LIBRARY=${OPENSSL_SSL}
    -DOPENSSL_CRYPTO_LIBRARY=${OPENSSL_CRYPTO})
endif()

run(${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${consumer_build} -G ${GENERATOR}
  -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
  -DCMAKE_BUILD_TYPE=${CONFIG}
  -DCMAKE_PREFIX_PATH=${prefix}
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
  -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF
  -DEDGELOCK_VERSION=${EDGELOCK_VERSION}
  ${toolchain}
  ${openssl})

file(STRINGS ${consumer_build}/CMakeCache.txt found REGEX "^edgelock_DIR:")
string(REGEX REPLACE "^edgelock_DIR:[A-Z]+=" "" found "${found}")
string(FIND "${found}" "${prefix}/" at)
if(NOT at EQUAL 0)
  message(FATAL_ERROR "install_test: edgelock was found at '${found}', not in ${prefix}")
endif()

run(${CMAKE_COMMAND} --build ${consumer_build} --config ${CONFIG})

file(GLOB_RECURSE app ${consumer_build}/app ${consumer_build}/*/app)
if(NOT app)
  message(FATAL_ERROR "install_test: the consumer built no 'app'")
endif()
list(GET app 0 app)
run(${emulator} ${app})
message("${run_output}")
message("install_test: ok (package in ${prefix}, edgelock_DIR=${found})")
