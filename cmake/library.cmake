# SPDX-License-Identifier: Apache-2.0
# edgelock_add_library(<target> <export name> <sources>...): a static library of the product,
# named edgelock::<export name> in both trees, its include/ directory public in the build tree
# and installed under the include directory, built with the library flags (warnings.cmake:
# no exceptions, no RTTI) on its own sources only.
function(edgelock_add_library target export_name)
  add_library(${target} STATIC ${ARGN})
  add_library(edgelock::${export_name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${export_name})
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(${target} PRIVATE $<BUILD_INTERFACE:edgelock_library_flags>)
endfunction()
