# SPDX-License-Identifier: Apache-2.0
# Debian packages with CPack (scripts/package.sh ARCH runs it on a build configured for /usr):
#
#   edgelock         the `edgelock` and `edgelock-sim` commands (the `runtime` component)
#   libedgelock-dev  headers, static archives, CMake and pkg-config files (`dev`)
#   libedgelock-c0   the C API's shared library, libedgelock-c.so.0 (`capi`, capi/); the
#                    number is the soname's, the project's major version
#
# The version is the project's (CMakeLists.txt, project()), like everything else's. The
# architecture is the target's, asked of dpkg-architecture for the compiler's multiarch
# triplet, so a cross build yields arm64 or armhf packages. The runtime dependencies are
# declared rather than computed: dpkg-shlibdeps needs the target's libraries registered with
# dpkg, which a cross build does not always have; the native package test compares this list
# with what dpkg-shlibdeps computes for the native commands.
if(NOT EDGELOCK_BUILD_CLIENTS)
  return()  # no commands to package
endif()
find_program(EDGELOCK_DPKG_ARCHITECTURE dpkg-architecture)
if(NOT EDGELOCK_DPKG_ARCHITECTURE OR NOT CMAKE_LIBRARY_ARCHITECTURE)
  return()  # not a Debian-style toolchain: no .deb
endif()
execute_process(
  COMMAND ${EDGELOCK_DPKG_ARCHITECTURE} -t ${CMAKE_LIBRARY_ARCHITECTURE} -qDEB_HOST_ARCH
  OUTPUT_VARIABLE EDGELOCK_DEB_ARCH OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)

set(EDGELOCK_PACKAGE_MAINTAINER "edgelock maintainers <maintainers@edgelock.invalid>"
  CACHE STRING "The Maintainer field of the Debian packages")

# Each package carries the copyright file and changelog Debian policy asks for. The
# changelog records each version; its newest entry must be the project's version (a release
# adds one), and it is gzipped reproducibly (-n: no name or time stamp inside).
file(STRINGS ${PROJECT_SOURCE_DIR}/packaging/changelog changelog_top LIMIT_COUNT 1)
if(NOT changelog_top MATCHES "^edgelock \\(${PROJECT_VERSION}\\) ")
  message(FATAL_ERROR "packaging/changelog: the newest entry is '${changelog_top}', "
    "not edgelock (${PROJECT_VERSION}): add an entry for this version")
endif()
set(changelog ${PROJECT_BINARY_DIR}/packaging/changelog.gz)
file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/packaging)
execute_process(COMMAND gzip -9nc ${PROJECT_SOURCE_DIR}/packaging/changelog
  OUTPUT_FILE ${changelog} COMMAND_ERROR_IS_FATAL ANY)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
  ${PROJECT_SOURCE_DIR}/packaging/changelog)
set(EDGELOCK_C_PACKAGE libedgelock-c${PROJECT_VERSION_MAJOR})
foreach(package_and_component
    edgelock:runtime libedgelock-dev:dev ${EDGELOCK_C_PACKAGE}:capi)
  string(REPLACE ":" ";" package_and_component ${package_and_component})
  list(GET package_and_component 0 package)
  list(GET package_and_component 1 component)
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/copyright ${changelog}
    DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${package} COMPONENT ${component})
endforeach()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME edgelock)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT ${EDGELOCK_PACKAGE_MAINTAINER})
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev capi)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # <name>_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE ${EDGELOCK_DEB_ARCH})
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_STRIP_FILES ON)  # the commands, and the archives' debug information (below)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME edgelock)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION net)
# The minimum versions are bookworm's, where the packages are built and tested.
set(EDGELOCK_SHARED_DEPENDS
  "libc6 (>= 2.34)" "libgcc-s1 (>= 3.0)" "libstdc++6 (>= 12)" "libhiredis0.14 (>= 0.14.1)"
  "libssl3 (>= 3.0.0)")
# The commands run the simulator, whose Redis runs the scripts in Lua 5.1.
string(JOIN ", " CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS ${EDGELOCK_SHARED_DEPENDS}
  "liblua5.1-0 (>= 5.1.5)")
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION "distributed lock for shell jobs, over Redis
The edgelock command runs a command while holding a lock that processes on
other machines share through Redis (one server, Sentinel, or Redlock over
independent masters): flock(1) across a fleet of gateways, with a renewing
lease, fencing tokens and TLS. edgelock-sim is its deterministic simulator of
clock skew, pauses, network faults and failover.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libedgelock-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
# What the installed headers include and the pkg-config files require.
# hiredis 1.x changed redisContext's layout under the same symbols: the archive needs 0.14.
# libedgelock-c.so, the link a C program's -ledgelock-c finds, points into libedgelock-c0.
string(JOIN ", " CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
  "${EDGELOCK_C_PACKAGE} (= ${PROJECT_VERSION})"
  "libssl-dev (>= 3.0.0)" "libhiredis-dev (>= 0.14.1)" "libhiredis-dev (<< 1.0)"
  "libasio-dev (>= 1:1.22)" "liblua5.1-0-dev (>= 5.1.5)")
set(CPACK_DEBIAN_DEV_PACKAGE_SUGGESTS "pkgconf, cmake")
set(CPACK_COMPONENT_DEV_DESCRIPTION "distributed lock client library over Redis (development files)
edgelock is a distributed lock client for constrained hardware: acquire,
renewal, release and fencing tokens over one Redis, Redis behind Sentinel, or
Redlock. Its core is a sans-IO state machine with no exceptions and no heap;
an asynchronous client (on Asio) and a blocking client drive it.
.
This package holds the headers, the static libraries, and the CMake and
pkg-config files (edgelock-core, edgelock-session, edgelock-transport-common,
edgelock-async, edgelock-blocking, edgelock-sim), and the C API: edgelock.h,
libedgelock-c.a and edgelock-c.pc.")

set(CPACK_DEBIAN_CAPI_PACKAGE_NAME ${EDGELOCK_C_PACKAGE})
set(CPACK_DEBIAN_CAPI_PACKAGE_SECTION libs)
# The same C and C++ runtime, hiredis and OpenSSL as the commands: the library links them.
string(JOIN ", " CPACK_DEBIAN_CAPI_PACKAGE_DEPENDS ${EDGELOCK_SHARED_DEPENDS})
# A shlibs file (programs built against it depend on this version or later; CPack's switch
# is for every package, and only this one has a shared library) and the ldconfig trigger.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
# Debian runs ldconfig by trigger, not from maintainer scripts: given postinst and postrm
# (which do nothing), CPack writes none of its own.
set(CPACK_DEBIAN_CAPI_PACKAGE_CONTROL_EXTRA
  ${PROJECT_SOURCE_DIR}/packaging/libedgelock-c0/triggers
  ${PROJECT_SOURCE_DIR}/packaging/libedgelock-c0/postinst
  ${PROJECT_SOURCE_DIR}/packaging/libedgelock-c0/postrm)
set(CPACK_COMPONENT_CAPI_DESCRIPTION "distributed lock client library over Redis (C API)
edgelock is a distributed lock client for constrained hardware: acquire,
renewal, release and fencing tokens over one Redis, Redis behind Sentinel, or
Redlock. This package holds libedgelock-c, its blocking client behind a C
interface (edgelock.h, in libedgelock-dev) for C programs and for other
languages through their foreign function interfaces.")

include(CPack)
