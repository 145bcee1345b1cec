# `cmake --install` yields a package: find_package(edgelock) then edgelock::core.
include(CMakePackageConfigHelpers)

set(EDGELOCK_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/edgelock)

set(edgelock_installed edgelock_core edgelock_session edgelock_sim)
set(edgelock_headers core/include/edgelock session/include/edgelock sim/include/edgelock)
if(EDGELOCK_BUILD_CLIENTS)
  list(APPEND edgelock_installed edgelock_transport_common edgelock_hiredis edgelock_asio)
  list(APPEND edgelock_headers transport/common/include/edgelock transport/hiredis/include/edgelock
    transport/asio/include/edgelock)
endif()
install(TARGETS ${edgelock_installed}
  EXPORT edgelockTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${edgelock_headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT edgelockTargets NAMESPACE edgelock:: DESTINATION ${EDGELOCK_CMAKE_DIR})

configure_package_config_file(cmake/edgelockConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/edgelockConfig.cmake
  INSTALL_DESTINATION ${EDGELOCK_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/edgelockConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${CMAKE_CURRENT_BINARY_DIR}/edgelockConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/edgelockConfigVersion.cmake
  DESTINATION ${EDGELOCK_CMAKE_DIR})
