#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checks that a static library is sans-IO: every symbol it needs from outside itself is on a
# short allowlist, and nothing it defines is RTTI.
#
#   scripts/check-sans-io.sh path/to/libedgelock_core.a
#   scripts/check-sans-io.sh path/to/libedgelock_session.a path/to/libedgelock_core.a
#
# Only the first library is checked; what the others define (sans-IO libraries it builds on,
# checked on their own) counts as inside it.
#
# The core must not allocate, throw, use RTTI, do I/O or syscalls, read clocks or touch
# threads (README.md, "What is here"). Those would show up as undefined symbols resolved by libc,
# libstdc++ or libgcc_s, so the check lists the undefined symbols of the archive (less those
# another member of the archive defines) and names the category of each forbidden one.
# An undefined symbol in no category and not allowed fails too: the allowlist is the
# contract, and growing it is a reviewed change to this file.
#
# Allowed (pure functions that touch no state outside their arguments, or abort):
#   abort                                   EDGELOCK_ASSERT's default handler
#   memcpy memmove memset memcmp bcmp memchr strlen strnlen
#                                           (bcmp: Clang's memcmp when only equality matters)
#   __memcpy_chk __memmove_chk __memset_chk  the same under _FORTIFY_SOURCE
#   __stack_chk_fail                        inserted by -fstack-protector (Ubuntu's default)
#   _GLOBAL_OFFSET_TABLE_                   PIC addressing on some targets
#   libgcc arithmetic helpers               64-bit division on armhf (__aeabi_uldivmod,
#                                           __udivdi3, ...), bit counts (__popcountdi2, ...),
#                                           soft-float conversions and comparisons
#
# Exit status: 0 clean, 1 forbidden or unknown symbols found, 2 usage or tool error.
# NM selects the nm to use (CMake passes CMAKE_NM; cross builds need the target's).
set -euo pipefail
export LC_ALL=C

usage_error() {
  echo "check-sans-io: $*" >&2
  exit 2
}

(($# >= 1)) || usage_error "usage: check-sans-io.sh LIBRARY.a [SANS_IO_DEPENDENCY.a ...]"
library=$1
shift
for file in "$library" "$@"; do
  [[ -f "$file" ]] || usage_error "no such file: $file"
done
nm_tool=${NM:-nm}
command -v "$nm_tool" >/dev/null 2>&1 || usage_error "nm not found: $nm_tool"

# POSIX format, external symbols only, one line per symbol prefixed with its member:
#   lib.a[member.o]: NAME TYPE [VALUE SIZE]
symbols=$("$nm_tool" -A -P -g "$library") || usage_error "$nm_tool failed on $library"

defined=$(awk '$3 !~ /^[Uwv]$/ { print $2 }' <<<"$symbols" | sort -u)
undefined=$(awk '$3 ~ /^[Uwv]$/ { print $2 }' <<<"$symbols" | sort -u)
[[ -n "$defined" ]] || usage_error "$library defines no external symbol: wrong file, or empty"
provided=$defined
for dependency in "$@"; do
  more=$("$nm_tool" -A -P -g "$dependency") || usage_error "$nm_tool failed on $dependency"
  more_defined=$(awk '$3 !~ /^[Uwv]$/ { print $2 }' <<<"$more")
  provided=$(printf '%s\n%s\n' "$provided" "$more_defined" | sort -u)
done

# Symbols a member needs and another member (or a dependency) provides stay inside.
external=$(comm -23 <(printf '%s\n' "$undefined" | sed '/^$/d') \
  <(printf '%s\n' "$provided" | sed '/^$/d'))

category_of() {
  local symbol=$1
  case "$symbol" in
    malloc | calloc | realloc | reallocarray | free | posix_memalign | aligned_alloc | \
      memalign | valloc | pvalloc | strdup | strndup | _Znw* | _Zna* | _Zdl* | _Zda*)
      echo heap ;;
    __cxa_throw | __cxa_rethrow | __cxa_allocate_exception | __cxa_free_exception | \
      __cxa_begin_catch | __cxa_end_catch | __cxa_call_unexpected | __cxa_call_terminate | \
      __gxx_personality_* | _Unwind_* | __cxa_current_exception_type | _ZSt9terminatev)
      echo exceptions ;;
    _ZSt[0-9]*__throw_*)
      echo "exceptions (libstdc++ throws even under -fno-exceptions)" ;;
    _ZTI* | _ZTS* | _ZTVN10__cxxabiv1* | __dynamic_cast | __cxa_bad_cast | __cxa_bad_typeid)
      echo rtti ;;
    socket | connect | bind | listen | accept | accept4 | shutdown | send | sendto | sendmsg | \
      recv | recvfrom | recvmsg | read | write | readv | writev | pread | pwrite | \
      open | open64 | openat | creat | close | ioctl | fcntl | poll | ppoll | select | \
      epoll_* | syscall | getaddrinfo | freeaddrinfo | getrandom | getentropy | getpid | \
      fopen | fopen64 | fdopen | fclose | fread | fwrite | fflush | fgets | fputs | fputc | \
      putc | putchar | puts | perror | printf | fprintf | sprintf | snprintf | dprintf | \
      vprintf | vfprintf | vsprintf | vsnprintf | vdprintf | __*printf_chk | __read_chk | \
      __assert_fail | stdout | stderr | stdin | _ZSt4cout | _ZSt4cerr | _ZSt4clog | \
      rand | srand | random | srandom | rand_r | drand48 | arc4random*)
      echo "io/syscalls" ;;
    clock_gettime | clock_getres | gettimeofday | time | clock | timespec_get | ftime | \
      localtime* | gmtime* | mktime | nanosleep | clock_nanosleep | sleep | usleep | \
      _ZNSt6chrono*3nowEv)
      echo clocks ;;
    pthread_* | __pthread_* | __cxa_guard_* | __tls_get_addr | __cxa_thread_atexit* | \
      sem_* | thrd_* | mtx_* | cnd_* | _ZNSt6thread*)
      echo threads ;;
    abort | memcpy | memmove | memset | memcmp | bcmp | memchr | strlen | strnlen | \
      __memcpy_chk | __memmove_chk | __memset_chk | __stack_chk_fail | _GLOBAL_OFFSET_TABLE_)
      echo allowed ;;
    __aeabi_* | __udivdi3 | __divdi3 | __umoddi3 | __moddi3 | __udivmoddi4 | __divmoddi4 | \
      __udivti3 | __divti3 | __umodti3 | __modti3 | __udivmodti4 | __divmodti4 | \
      __clz[sdt]i2 | __ctz[sdt]i2 | __ffs[sdt]i2 | __popcount[sdt]i2 | __parity[sdt]i2 | \
      __bswap[sdt]i2 | __ashl[dt]i3 | __ashr[dt]i3 | __lshr[dt]i3 | __mul[dt]i3 | \
      __neg[dt]i2 | __cmp[dt]i2 | __ucmp[dt]i2 | \
      __add[sdt]f3 | __sub[sdt]f3 | __mul[sdt]f3 | __div[sdt]f3 | __neg[sdt]f2 | \
      __fix[sdt]f[sdt]i | __fixuns[sdt]f[sdt]i | __float[sdt]i[sdt]f | \
      __floatun[sdt]i[sdt]f | __extend[sdt]f[sdt]f2 | __trunc[sdt]f[sdt]f2 | \
      __eq[sdt]f2 | __ne[sdt]f2 | __lt[sdt]f2 | __le[sdt]f2 | __gt[sdt]f2 | __ge[sdt]f2 | \
      __unord[sdt]f2 | __cmp[sdt]f2)
      echo allowed ;;
    *)
      echo "not on the sans-IO allowlist" ;;
  esac
}

demangle() {
  if command -v c++filt >/dev/null 2>&1; then c++filt -- "$1"; else echo "$1"; fi
}

# The member that references (or defines) a symbol, for the report.
members_of() {
  awk -v name="$1" '$2 == name { sub(/:$/, "", $1); print $1 }' <<<"$symbols" | sort -u |
    paste -sd ' ' -
}

violations=0
report() {
  local category=$1 symbol=$2 what=$3
  local shown
  shown=$(demangle "$symbol")
  if [[ "$shown" == "$symbol" ]]; then shown=""; else shown=" ($shown)"; fi
  printf '%-28s %s %s%s  in %s\n' "$category:" "$what" "$symbol" "$shown" "$(members_of "$symbol")"
  violations=$((violations + 1))
}

while IFS= read -r symbol; do
  [[ -n "$symbol" ]] || continue
  category=$(category_of "$symbol")
  [[ "$category" == allowed ]] || report "$category" "$symbol" "needs"
done <<<"$external"

# Defining type_info objects means a translation unit was compiled with RTTI on.
while IFS= read -r symbol; do
  case "$symbol" in
    _ZTI* | _ZTS*) report rtti "$symbol" "defines" ;;
  esac
done <<<"$defined"

if ((violations > 0)); then
  echo "check-sans-io: $library: $violations forbidden or unknown symbol(s)"
  exit 1
fi
count=$(printf '%s\n' "$external" | sed '/^$/d' | wc -l)
echo "check-sans-io: $library: clean ($count external symbol(s), all allowed)"
