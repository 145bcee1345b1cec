# `cmake --install` yields a package: find_package(edgelock) then edgelock::core.
include(CMakePackageConfigHelpers)

set(EDGELOCK_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/edgelock)

install(TARGETS edgelock_core edgelock_session edgelock_transport_common edgelock_hiredis edgelock_asio edgelock_sim
  EXPORT edgelockTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY core/include/edgelock session/include/edgelock transport/common/include/edgelock
  transport/hiredis/include/edgelock transport/asio/include/edgelock sim/include/edgelock
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
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
