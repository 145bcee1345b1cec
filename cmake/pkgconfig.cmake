# SPDX-License-Identifier: Apache-2.0
# pkg-config files for the installed libraries, for builds that do not use CMake (Makefiles,
# Buildroot and Yocto recipes): `pkg-config --cflags --libs edgelock-async`.
#
# edgelock installs static archives only, so a consumer's link needs every dependency of
# every archive it pulls in, with or without --static: dependencies go in Requires and Libs,
# never in the .private fields (those are for what a shared library already carries).
# `pkg-config --static` adds the dependencies' own private libraries, for a fully static link.
#
# The prefix is the install prefix, absolute, as distributions' .pc files are: a staged tree
# or an SDK's sysroot (Yocto, Buildroot, a .deb unpacked with dpkg -x) is found through
# PKG_CONFIG_SYSROOT_DIR, which pkg-config and pkgconf both prepend to absolute -I and -L
# paths. (A prefix relative to ${pcfiledir} would be relocatable without it, but
# freedesktop pkg-config prepends the sysroot to that already-rooted path a second time.)

set(EDGELOCK_PKGCONFIG_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# edgelock_pkg_config(<name> <library> <description> [REQUIRES ...] [CFLAGS ...] [LIBS ...])
# writes <name>.pc for the archive lib<library>.a and installs it with the dev component.
function(edgelock_pkg_config PC_NAME PC_LIBRARY PC_DESCRIPTION)
  cmake_parse_arguments(PARSE_ARGV 3 arg "" "" "REQUIRES;CFLAGS;LIBS")
  list(JOIN arg_REQUIRES ", " PC_REQUIRES)
  set(PC_CFLAGS "")
  foreach(flag IN LISTS arg_CFLAGS)
    string(APPEND PC_CFLAGS " ${flag}")
  endforeach()
  set(PC_LIBS "")
  foreach(flag IN LISTS arg_LIBS)
    string(APPEND PC_LIBS " ${flag}")
  endforeach()
  edgelock_install_pc(edgelock.pc.in)
endfunction()

# edgelock_pkg_config_alias(<old name> <name>) writes <old name>.pc, which requires <name>.pc
# and adds nothing, and installs it with the dev component.
function(edgelock_pkg_config_alias PC_NAME PC_NEW_NAME)
  edgelock_install_pc(edgelock-alias.pc.in)
endfunction()

# Writes ${PC_NAME}.pc from cmake/<template> and installs it. Two steps, so the prefix is the
# one `cmake --install --prefix` installs to, not the one configured: everything else now,
# @PC_PREFIX@ kept for the install step, which fills it in just before the file is copied.
macro(edgelock_install_pc template_name)
  set(PC_PREFIX "@PC_PREFIX@")
  set(template ${PROJECT_BINARY_DIR}/pkgconfig/${PC_NAME}.pc.in)
  set(generated ${PROJECT_BINARY_DIR}/pkgconfig/${PC_NAME}.pc)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${template_name} ${template} @ONLY)
  install(CODE "set(PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
    configure_file(\"${template}\" \"${generated}\" @ONLY)" COMPONENT dev)
  install(FILES ${generated} DESTINATION ${EDGELOCK_PKGCONFIG_DIR} COMPONENT dev)
endmacro()

edgelock_pkg_config(edgelock-core edgelock_core
  "edgelock's sans-IO lock state machine and RESP codec")
edgelock_pkg_config(edgelock-session edgelock_session
  "edgelock's sans-IO Redis session: addresses, handshake, Sentinel, reconnection"
  REQUIRES edgelock-core)
edgelock_pkg_config(edgelock-sim edgelock_sim
  "edgelock's deterministic simulator of Redis, Sentinel and the network"
  REQUIRES edgelock-session lua5.1 LIBS -pthread)
if(EDGELOCK_BUILD_CLIENTS)
  edgelock_pkg_config(edgelock-transport-common edgelock_transport_common
    "What edgelock's two clients share: TLS (OpenSSL), entropy, error codes"
    REQUIRES edgelock-session openssl)
  # The async client is compiled without exceptions and RTTI, and its headers are Asio's
  # standalone ones: a consumer must see Asio configured the same way (these are the
  # CMake target's public definitions).
  get_target_property(asio_definitions edgelock_async INTERFACE_COMPILE_DEFINITIONS)
  list(TRANSFORM asio_definitions PREPEND -D)
  set(asio_uring "")
  if(EDGELOCK_IO_URING)
    set(asio_uring liburing)
  endif()
  edgelock_pkg_config(edgelock-async edgelock_async
    "edgelock's asynchronous lock client on standalone Asio"
    REQUIRES edgelock-transport-common ${asio_uring} CFLAGS ${asio_definitions} LIBS -pthread)
  # hiredis 1.x laid out redisContext differently (its `err` moved): an archive built
  # against 0.14's headers must not meet it at link time.
  edgelock_pkg_config(edgelock-blocking edgelock_blocking
    "edgelock's blocking lock client on hiredis"
    REQUIRES edgelock-transport-common "hiredis >= 0.14" "hiredis < 1.0" LIBS -pthread)
  # The clients' former names, kept for one release.
  edgelock_pkg_config_alias(edgelock-asio edgelock-async)
  edgelock_pkg_config_alias(edgelock-hiredis edgelock-blocking)
endif()
