// SPDX-License-Identifier: Apache-2.0
// The README's C example: one lock over one Redis, with a fence token, through edgelock.h.
// Build: cc -std=c11 quickstart.c $(pkg-config --cflags --libs edgelock-c)
#include <edgelock.h>
#include <stdio.h>

int main(int argc, char** argv) {
    const char* instances[] = {argc > 1 ? argv[1] : "redis://127.0.0.1:6379"};
    edgelock_options options;
    edgelock_options_init(&options, sizeof options);
    options.instances = instances;
    options.instance_count = 1;
    options.name = "reports:daily";
    options.fencing = 1;

    edgelock_lock* lock;
    int rc = edgelock_open(&options, &lock);
    edgelock_hold hold;
    if (rc == EDGELOCK_OK) rc = edgelock_acquire(lock, 5000, &hold);  // wait up to 5 s
    if (rc != EDGELOCK_OK) {
        fprintf(stderr, "lock: %s\n", edgelock_last_error_message());  // why, in words
        edgelock_close(lock);
        return 1;
    }
    printf("holding reports:daily, fence token %lld\n", (long long)hold.fence);
    rc = edgelock_release(lock);  // EDGELOCK_E_EXPIRED: the work may have overlapped
    edgelock_close(lock);
    return rc == EDGELOCK_OK ? 0 : 1;
}
