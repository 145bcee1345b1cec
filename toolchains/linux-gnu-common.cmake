# SPDX-License-Identifier: Apache-2.0
# Shared by the Debian multiarch toolchain files; include()d after they set
# EDGELOCK_TARGET_TRIPLET, CMAKE_SYSTEM_PROCESSOR and EDGELOCK_QEMU.
#
# Debian's cross compilers treat the build machine's / as the sysroot: target headers are in
# /usr/include (shared) and /usr/<triplet>/include, target libraries in /usr/lib/<triplet>
# (from `:arm64`/`:armhf` packages) and /usr/<triplet>/lib (the cross libc). So the find
# root is / plus /usr/<triplet>, and CMAKE_LIBRARY_ARCHITECTURE makes CMake look in the
# target's multiarch directories rather than the build machine's.
set(CMAKE_SYSTEM_NAME Linux)

set(CMAKE_C_COMPILER ${EDGELOCK_TARGET_TRIPLET}-gcc)
set(CMAKE_CXX_COMPILER ${EDGELOCK_TARGET_TRIPLET}-g++)
set(CMAKE_LIBRARY_ARCHITECTURE ${EDGELOCK_TARGET_TRIPLET})

set(CMAKE_FIND_ROOT_PATH /usr/${EDGELOCK_TARGET_TRIPLET} /)
# Programs (redis-server, nm, qemu) are the build machine's; everything linked is the target's.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config for the target: pkgconf:<arch> installs <triplet>-pkg-config, which searches
# /usr/lib/<triplet>/pkgconfig. Without it, the build machine's pkg-config is pointed there.
find_program(EDGELOCK_TARGET_PKG_CONFIG NAMES ${EDGELOCK_TARGET_TRIPLET}-pkg-config)
if(EDGELOCK_TARGET_PKG_CONFIG)
  set(PKG_CONFIG_EXECUTABLE ${EDGELOCK_TARGET_PKG_CONFIG}
    CACHE FILEPATH "pkg-config for the target")
else()
  set(ENV{PKG_CONFIG_LIBDIR}
    "/usr/lib/${EDGELOCK_TARGET_TRIPLET}/pkgconfig:/usr/share/pkgconfig")
  set(ENV{PKG_CONFIG_PATH} "")
endif()

# Tests, gtest_discover_tests and any add_test(COMMAND <target>) run through qemu-user:
# there is no binfmt_misc here, so the emulator must be named. -L makes qemu resolve the
# target's dynamic loader (/lib/ld-linux-*.so) under /usr/<triplet>, the cross toolchain's.
# That loader would then take libc.so.6 from /lib/<triplet> when a `:arm64`/`:armhf`
# package pulled in libc6:<arch>, usually a different glibc build than the cross one: a
# mismatched loader and libc hang in fork() under qemu. LD_LIBRARY_PATH keeps the whole C
# and C++ runtime the one the binaries were linked against; other libraries (hiredis) still
# come from /usr/lib/<triplet>. Native programs the tests exec (redis-server) ignore it.
find_program(EDGELOCK_QEMU_PROGRAM NAMES ${EDGELOCK_QEMU} ${EDGELOCK_QEMU}-static)
if(EDGELOCK_QEMU_PROGRAM)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${EDGELOCK_QEMU_PROGRAM}
    -L /usr/${EDGELOCK_TARGET_TRIPLET}
    -E LD_LIBRARY_PATH=/usr/${EDGELOCK_TARGET_TRIPLET}/lib)
else()
  message(WARNING "${EDGELOCK_QEMU} not found (apt-get install qemu-user): "
    "the build works, but ctest cannot run the ${CMAKE_SYSTEM_PROCESSOR} binaries")
endif()
