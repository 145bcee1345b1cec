// SPDX-License-Identifier: Apache-2.0
// A deliberately bad "core": one of each thing the sans-IO check forbids. It is built as its
// own static library only so the check can be shown failing on it (tests/checks). Nothing
// links it.
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>

namespace sans_io_fixture {

struct base {
    virtual ~base() = default;
};
struct derived : base {};

// heap: malloc/free and operator new/delete. Each pointer escapes, so the optimiser cannot
// elide the allocation.
void* heap_allocate(std::size_t bytes) { return std::malloc(bytes); }
void heap_free(void* block) { std::free(block); }
int* heap_new(int value) { return new int(value); }
void heap_delete(int* value) { delete value; }

// exceptions: throw.
int exceptions(int value) {
    if (value < 0) {
        throw value;
    }
    return value;
}

// RTTI: dynamic_cast and typeid data.
bool rtti(base* object) { return dynamic_cast<derived*>(object) != nullptr; }

// I/O and syscalls.
int io() {
    std::printf("hello\n");
    return socket(AF_INET, SOCK_STREAM, 0);
}

// Clocks.
long clocks() {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec;
}

// Threads.
unsigned long threads() { return static_cast<unsigned long>(pthread_self()); }

}  // namespace sans_io_fixture
