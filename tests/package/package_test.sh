#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The packages' test: are scripts/package.sh's .debs what a gateway image or a user's build
# can consume?
#
#   tests/package/package_test.sh ARCH RUNTIME_DEB DEV_DEB C_DEB
#
# (the three .debs scripts/package.sh prints: edgelock, libedgelock-dev, libedgelock-c0)
#
# Every architecture (amd64, arm64, armhf), read with dpkg-deb -I/-c and readelf only:
#   - Package, Version (the project's, from CMakeLists.txt) and Architecture fields; the
#     runtime package and libedgelock-c0 depend on libhiredis0.14 and libssl3;
#     libedgelock-dev depends on libedgelock-c0 of its version
#   - the C API: edgelock.h, libedgelock-c.a, the libedgelock-c.so link and edgelock-c.pc in
#     libedgelock-dev; libedgelock-c.so.0 in libedgelock-c0, with that soname, exporting
#     edgelock_* symbols only
#   - the files: both commands, copyright and changelog, the headers, the six static
#     archives, the CMake package and the six pkg-config files (each of the project's version);
#     in edgelock, the manual pages (gzipped, nothing uncompressed under /usr/share/man), the
#     bash completion, README.md and CLI.md (gzipped) and the systemd example under
#     /usr/share/doc/edgelock, each the same bytes as its source
#   - both copyright files: machine-readable (DEP-5), Apache-2.0, and LICENSE is the text
#     they refer to (/usr/share/common-licenses/Apache-2.0, where the machine has it)
#   - the commands, the archives and the shared library are built for ARCH (ELF machine)
# The machine's own architecture, in addition:
#   - the declared dependencies cover what dpkg-shlibdeps computes for the commands and
#     for libedgelock-c.so.0
#   - both packages unpacked with dpkg -x into a temporary root (never into the machine's
#     own); `edgelock --version` prints the version
#   - the consumer project (tests/package/consumer: a program on each client) copied outside
#     the tree and built against that root twice: with CMake find_package(edgelock), and with
#     its plain Makefile and `pkg-config --cflags --libs edgelock-blocking|edgelock-async`
#     (PKG_CONFIG_SYSROOT_DIR naming the root, as for an SDK's sysroot), and a C program
#     with `pkg-config --cflags --libs edgelock-c` (the shared library from the root);
#     all five programs run against a real redis-server (fsynced AOF, so the restart guard
#     lets it count at once) started on loopback and stopped by PID
# Prints what it checked; exits non-zero at the first failure, saying what differed.
set -euo pipefail

(($# == 4)) || { echo "usage: package_test.sh ARCH RUNTIME_DEB DEV_DEB C_DEB" >&2; exit 2; }
arch=$1
runtime_deb=$(realpath "$2")
dev_deb=$(realpath "$3")
c_deb=$(realpath "$4")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source_root=$(cd "$here/../.." && pwd)

case "$arch" in
  amd64) triplet=x86_64-linux-gnu; machine="Advanced Micro Devices X86-64" ;;
  arm64) triplet=aarch64-linux-gnu; machine="AArch64" ;;
  armhf) triplet=arm-linux-gnueabihf; machine="ARM" ;;
  *) echo "package_test: unknown architecture $arch" >&2; exit 2 ;;
esac

fail() {
  echo "package_test: FAIL: $*" >&2
  exit 1
}
checked() {
  echo "package_test: ok: $*"
}

version=$(sed -n 's/^project(edgelock VERSION \([0-9.]*\).*/\1/p' "$source_root/CMakeLists.txt")
[[ -n "$version" ]] || fail "no version in CMakeLists.txt's project()"

work=$(mktemp -d "${TMPDIR:-/tmp}/edgelock-package-test.XXXXXX")
source "$source_root/scripts/redis-on-loopback.sh"
redis_dir=$work
cleanup() {
  stop_redis_process
  rm -rf "$work"
}
trap cleanup EXIT

# --- fields ---------------------------------------------------------------------------------
expect_field() {
  local deb=$1 field=$2 expected=$3 actual
  actual=$(dpkg-deb -f "$deb" "$field")
  [[ "$actual" == "$expected" ]] || fail "$(basename "$deb"): $field is '$actual', not '$expected'"
}
expect_field "$runtime_deb" Package edgelock
expect_field "$dev_deb" Package libedgelock-dev
c_package=libedgelock-c${version%%.*}  # the soname's number, the major version
expect_field "$c_deb" Package "$c_package"
for deb in "$runtime_deb" "$dev_deb" "$c_deb"; do
  expect_field "$deb" Version "$version"
  expect_field "$deb" Architecture "$arch"
done
depends=$(dpkg-deb -f "$runtime_deb" Depends)
c_depends=$(dpkg-deb -f "$c_deb" Depends)
for needed in libhiredis0.14 libssl3; do
  grep -q "\(^\|, \)$needed\( \|,\|$\)" <<<"$depends" ||
    fail "edgelock does not depend on $needed: $depends"
  grep -q "\(^\|, \)$needed\( \|,\|$\)" <<<"$c_depends" ||
    fail "$c_package does not depend on $needed: $c_depends"
done
dev_depends=$(dpkg-deb -f "$dev_deb" Depends)
grep -q "\(^\|, \)$c_package (= $version)" <<<"$dev_depends" ||
  fail "libedgelock-dev does not depend on $c_package (= $version): $dev_depends"
checked "fields: edgelock, libedgelock-dev and $c_package $version, $arch; Depends: $depends"

# --- files ----------------------------------------------------------------------------------
expect_files() {
  local deb=$1 listing
  shift
  listing=$(dpkg-deb -c "$deb" | awk '{ print $6 }')
  for file in "$@"; do
    grep -qx "\./$file" <<<"$listing" || fail "$(basename "$deb") has no /$file"
  done
}
libraries=(core session sim transport_common async blocking)
pc_names=(edgelock-core edgelock-session edgelock-sim edgelock-transport-common edgelock-async
  edgelock-blocking edgelock-asio edgelock-hiredis)  # the last two: former names
doc=usr/share/doc/edgelock
systemd_example=(README.md edgelock-nightly.service edgelock-nightly.timer edgelock-nightly.env)
runtime_files=(usr/bin/edgelock usr/bin/edgelock-sim "$doc/copyright" "$doc/changelog.gz"
  usr/share/man/man1/edgelock.1.gz usr/share/man/man1/edgelock-sim.1.gz
  usr/share/bash-completion/completions/edgelock "$doc/README.md.gz" "$doc/CLI.md.gz")
for file in "${systemd_example[@]}"; do
  runtime_files+=("$doc/examples/systemd/$file")
done
expect_files "$runtime_deb" "${runtime_files[@]}"
uncompressed=$(dpkg-deb -c "$runtime_deb" | awk '{ print $6 }' |
  grep '^\./usr/share/man/.*[^/]$' | grep -v '\.gz$' || true)
[[ -z "$uncompressed" ]] || fail "edgelock has uncompressed manual pages: $uncompressed"
dev_files=(usr/include/edgelock/lock.hpp usr/include/edgelock/session/connection.hpp
  usr/include/edgelock/async_client.hpp usr/include/edgelock/blocking_lock.hpp
  usr/include/edgelock/asio_client.hpp usr/include/edgelock/hiredis_lock.hpp
  usr/include/edgelock/sim/world.hpp usr/lib/$triplet/cmake/edgelock/edgelockConfig.cmake
  usr/share/doc/libedgelock-dev/copyright usr/share/doc/libedgelock-dev/changelog.gz
  usr/include/edgelock.h usr/lib/$triplet/libedgelock-c.a usr/lib/$triplet/libedgelock-c.so
  usr/lib/$triplet/pkgconfig/edgelock-c.pc)
for library in "${libraries[@]}"; do
  dev_files+=("usr/lib/$triplet/libedgelock_$library.a")
done
for pc in "${pc_names[@]}"; do
  dev_files+=("usr/lib/$triplet/pkgconfig/$pc.pc")
done
expect_files "$dev_deb" "${dev_files[@]}"
c_library=usr/lib/$triplet/libedgelock-c.so.$version
expect_files "$c_deb" "$c_library" "usr/lib/$triplet/libedgelock-c.so.${version%%.*}" \
  "usr/share/doc/$c_package/copyright" "usr/share/doc/$c_package/changelog.gz"
checked "files: the commands, ${#dev_files[@]} development files, the C library"

# --- what the files are built for -----------------------------------------------------------
unpacked=$work/root
mkdir -p "$unpacked"
dpkg -x "$runtime_deb" "$unpacked"
dpkg -x "$dev_deb" "$unpacked"
dpkg -x "$c_deb" "$unpacked"
expect_machine() {
  local file=$1 machines
  machines=$(readelf -h "$file" | sed -n 's/^ *Machine: *//p' | sort -u)
  [[ "$machines" == "$machine" ]] ||
    fail "${file#"$unpacked"/} is built for '$machines', not '$machine'"
}
for command in edgelock edgelock-sim; do
  expect_machine "$unpacked/usr/bin/$command"
done
for library in "${libraries[@]}"; do
  expect_machine "$unpacked/usr/lib/$triplet/libedgelock_$library.a"
done
expect_machine "$unpacked/usr/lib/$triplet/libedgelock-c.a"
expect_machine "$unpacked/$c_library"
for pc in "${pc_names[@]}" edgelock-c; do
  pc_version=$(sed -n 's/^Version: //p' "$unpacked/usr/lib/$triplet/pkgconfig/$pc.pc")
  [[ "$pc_version" == "$version" ]] || fail "$pc.pc says version '$pc_version', not '$version'"
done
checked "the commands, archives and C library are $machine; every .pc is version $version"

# --- the C library's ABI: its soname, and edgelock_* alone exported (readelf: any ARCH) ------
soname=$(readelf -d "$unpacked/$c_library" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ "$soname" == "libedgelock-c.so.${version%%.*}" ]] ||
  fail "$c_library's soname is '$soname', not libedgelock-c.so.${version%%.*}"
# Defined (section index neither UND nor ABS, which the version node is), global or weak.
exported=$(readelf --dyn-syms -W "$unpacked/$c_library" |
  awk '$5 ~ /^(GLOBAL|WEAK)$/ && $7 != "UND" && $7 != "ABS" { sub(/@.*/, "", $8); print $8 }' |
  sort -u)
foreign=$(grep -v '^edgelock_' <<<"$exported" || true)
[[ -n "$exported" && -z "$foreign" ]] ||
  fail "$c_library exports more than edgelock_*: $(head -n 5 <<<"$foreign")"
checked "$c_library: soname $soname, $(wc -l <<<"$exported") symbols, all edgelock_"

# --- what edgelock carries beside the commands: the same bytes as the sources ----------------
same_as_source() {
  local packaged=$1 source=$2
  if [[ "$packaged" == *.gz ]]; then
    gzip -t "$unpacked/$packaged" || fail "/$packaged is not gzip"
    cmp -s <(gzip -dc "$unpacked/$packaged") "$source_root/$source" ||
      fail "/$packaged is not $source"
  else
    cmp -s "$unpacked/$packaged" "$source_root/$source" || fail "/$packaged is not $source"
  fi
}
same_as_source "$doc/README.md.gz" README.md
same_as_source "$doc/CLI.md.gz" docs/CLI.md
same_as_source usr/share/bash-completion/completions/edgelock tools/edgelock/completion/edgelock
for file in "${systemd_example[@]}"; do
  same_as_source "$doc/examples/systemd/$file" "examples/systemd/$file"
done
for page in edgelock edgelock-sim; do
  # The configured page: the source with the version and the changelog's date filled in.
  gzip -dc "$unpacked/usr/share/man/man1/$page.1.gz" | grep -v '^\.TH ' >"$work/$page.1"
  grep -v '^\.TH ' "$source_root/docs/man/$page.1.in" | cmp -s - "$work/$page.1" ||
    fail "/usr/share/man/man1/$page.1.gz is not docs/man/$page.1.in"
  th=$(gzip -dc "$unpacked/usr/share/man/man1/$page.1.gz" | grep '^\.TH ')
  [[ "$th" == *"\"edgelock $version\""* ]] ||
    fail "$page.1's .TH line names no version $version: $th"
done
checked "man pages (version $version), bash completion, README.md, CLI.md" \
  "and the systemd example, as in the sources"

dep5_format='Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/'
for deb in "$runtime_deb" "$dev_deb"; do
  package=$(dpkg-deb -f "$deb" Package)
  copyright=$unpacked/usr/share/doc/$package/copyright
  head -n 1 "$copyright" | grep -qx "$dep5_format" ||
    fail "$package's copyright is not machine-readable (DEP-5): $(head -n 1 "$copyright")"
  grep -qx 'License: Apache-2.0' "$copyright" ||
    fail "$package's copyright names no License: Apache-2.0"
  grep -q '/usr/share/common-licenses/Apache-2.0' "$copyright" ||
    fail "$package's copyright does not refer to /usr/share/common-licenses/Apache-2.0"
done
if [[ -f /usr/share/common-licenses/Apache-2.0 ]]; then
  cmp -s "$source_root/LICENSE" /usr/share/common-licenses/Apache-2.0 ||
    fail "LICENSE is not the Apache License 2.0 of /usr/share/common-licenses/Apache-2.0"
fi
checked "copyright: DEP-5, Apache-2.0 (LICENSE is its text)"

if [[ "$arch" != "$(dpkg --print-architecture)" ]]; then
  echo "package_test: $arch packages checked (not this machine's: no consumer builds)"
  exit 0
fi

# --- declared dependencies against dpkg-shlibdeps -------------------------------------------
mkdir -p "$work/shlibdeps/debian"
touch "$work/shlibdeps/debian/control"
computed=$(cd "$work/shlibdeps" && dpkg-shlibdeps -O "$unpacked/usr/bin/edgelock" \
  "$unpacked/usr/bin/edgelock-sim" "$unpacked/$c_library" 2>/dev/null |
  sed -n 's/^shlibs:Depends=//p')
[[ -n "$computed" ]] || fail "dpkg-shlibdeps computed nothing"
IFS=',' read -ra requirements <<<"$computed"
for requirement in "${requirements[@]}"; do
  requirement=$(xargs <<<"$requirement")  # trimmed: "libc6 (>= 2.34)"
  package=${requirement%% *}
  declared=$(tr ',' '\n' <<<"$depends" | xargs -I{} echo {} | grep "^$package\( \|$\)" || true)
  [[ -n "$declared" ]] || fail "dpkg-shlibdeps requires '$requirement'; Depends has no $package"
  if [[ "$requirement" == *">="* ]]; then
    needed_version=$(sed 's/.*>= *\([^)]*\)).*/\1/' <<<"$requirement")
    declared_version=$(sed -n 's/.*>= *\([^)]*\)).*/\1/p' <<<"$declared")
    [[ -n "$declared_version" ]] &&
      dpkg --compare-versions "$declared_version" ge "$needed_version" ||
      fail "dpkg-shlibdeps requires '$requirement'; Depends declares '$declared'"
  fi
done
# The C library links what the commands link, except Lua: only the simulator runs it.
depends_but_lua=$(sed 's/, liblua5\.1-0 ([^)]*)//' <<<"$depends")
[[ "$c_depends" == "$depends_but_lua" ]] ||
  fail "$c_package's Depends ($c_depends) differ from edgelock's but Lua ($depends_but_lua)"
checked "Depends (edgelock's and $c_package's) covers dpkg-shlibdeps' $computed"

# --- the unpacked commands ------------------------------------------------------------------
printed=$("$unpacked/usr/bin/edgelock" --version)
[[ "$printed" == *"$version"* ]] || fail "edgelock --version printed '$printed', not $version"
checked "edgelock --version: $printed"

# --- a real Redis (fsynced AOF: the restart guard lets it count at once) -------------------
start_redis --appendonly yes --appendfsync always
url=redis://127.0.0.1:$redis_port
checked "redis-server (pid $redis_pid) on $url"

# --- the consumers through CMake find_package ----------------------------------------------
run_consumers() {
  local directory=$1 client
  shift
  for client in "$@"; do
    # The C consumer's libedgelock-c.so.0 is the unpacked one, not installed on the machine.
    LD_LIBRARY_PATH=$unpacked/usr/lib/$triplet timeout 60 "$directory/$client" "$url" ||
      fail "the $client consumer built in $directory failed"
  done
}
cmake_build=$work/cmake/build
cp -r "$here/consumer" "$work/cmake"
cmake -S "$work/cmake" -B "$cmake_build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$unpacked/usr" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
  -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF -DEDGELOCK_VERSION="$version" \
  >"$work/cmake.log" 2>&1 ||
  { cat "$work/cmake.log" >&2; fail "the CMake consumer does not configure"; }
found=$(sed -n 's/^edgelock_DIR:[A-Z]*=//p' "$cmake_build/CMakeCache.txt")
[[ "$found" == "$unpacked/usr/lib/$triplet/cmake/edgelock" ]] ||
  fail "find_package(edgelock) found '$found', not the unpacked package"
cmake --build "$cmake_build" -j "$(nproc)" >"$work/cmake-build.log" 2>&1 ||
  { cat "$work/cmake-build.log" >&2; fail "the CMake consumer does not build"; }
run_consumers "$cmake_build" blocking asio former_names
checked "CMake consumer, both clients and their former names (edgelock_DIR=$found)"

# --- the consumers through a Makefile and pkg-config ----------------------------------------
# The unpacked root as a sysroot, as an SDK's staged packages are (cmake/pkgconfig.cmake).
export PKG_CONFIG_PATH=$unpacked/usr/lib/$triplet/pkgconfig
export PKG_CONFIG_SYSROOT_DIR=$unpacked
cflags=$(pkg-config --cflags edgelock-async)
[[ "$cflags" == "-I$unpacked/usr/include "* ]] ||
  fail "pkg-config --cflags edgelock-async is '$cflags': not the unpacked headers first"
# edgelock.h needs no other header: hiredis's include directory is the blocking client's.
c_cflags=$(pkg-config --cflags edgelock-c)
c_cflags=${c_cflags%"${c_cflags##*[! ]}"}  # pkgconf ends the line with a space
[[ "$c_cflags" == "-I$unpacked/usr/include" ]] ||
  fail "pkg-config --cflags edgelock-c is '$c_cflags', not the unpacked headers alone"
cp -r "$here/consumer" "$work/make"
make -C "$work/make" -j "$(nproc)" >"$work/make.log" 2>&1 ||
  { cat "$work/make.log" >&2; fail "the Makefile consumer does not build"; }
run_consumers "$work/make" blocking asio c former_names
checked "Makefile consumer, both clients, their former names and the C API:" \
  "pkg-config --libs edgelock-async = $(pkg-config --libs edgelock-async);" \
  "pkg-config --libs edgelock-c = $(pkg-config --libs edgelock-c)"

echo "package_test: $arch packages ok"
