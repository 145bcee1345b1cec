# SPDX-License-Identifier: Apache-2.0
# `cmake --install` yields a package: find_package(edgelock) then edgelock::core, and
# pkg-config files (cmake/pkgconfig.cmake). Everything here is the `dev` component (headers,
# static archives, CMake and pkg-config files); the commands are `runtime` (tools/edgelock).
# scripts/package.sh turns the two into Debian packages (cmake/package.cmake).
include(CMakePackageConfigHelpers)

set(EDGELOCK_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/edgelock)

set(edgelock_installed edgelock_core edgelock_session edgelock_sim)
set(edgelock_headers core/include/edgelock session/include/edgelock sim/include/edgelock)
if(EDGELOCK_BUILD_CLIENTS)
  list(APPEND edgelock_installed edgelock_transport_common edgelock_blocking edgelock_async)
  list(APPEND edgelock_headers transport/common/include/edgelock transport/hiredis/include/edgelock
    transport/asio/include/edgelock)
endif()
install(TARGETS ${edgelock_installed}
  EXPORT edgelockTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# `cmake --install --strip` (and cpack, cmake/package.cmake) strips the commands; the same
# request drops the archives' debug information, which is most of their size, and keeps
# their symbols.
# DESTDIR and the prefix are the install's, read when it runs (hence the escaped `$`).
set(installed_libdir "\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}")
foreach(target IN LISTS edgelock_installed)
  install(CODE "if(CMAKE_INSTALL_DO_STRIP)
    execute_process(COMMAND \"${CMAKE_STRIP}\" --strip-debug --remove-section=.comment
      --enable-deterministic-archives
      \"${installed_libdir}/$<TARGET_FILE_NAME:${target}>\"
      COMMAND_ERROR_IS_FATAL ANY)
  endif()" COMPONENT dev)
endforeach()
install(DIRECTORY ${edgelock_headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
install(EXPORT edgelockTargets NAMESPACE edgelock:: DESTINATION ${EDGELOCK_CMAKE_DIR}
  COMPONENT dev)

configure_package_config_file(cmake/edgelockConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/edgelockConfig.cmake
  INSTALL_DESTINATION ${EDGELOCK_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/edgelockConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${CMAKE_CURRENT_BINARY_DIR}/edgelockConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/edgelockConfigVersion.cmake
  DESTINATION ${EDGELOCK_CMAKE_DIR} COMPONENT dev)

include(cmake/pkgconfig.cmake)
include(cmake/package.cmake)
