// SPDX-License-Identifier: Apache-2.0
// A counting lock through edgelock.h: at most two gateways of a site download an update over
// its one uplink at once. The name "uplink:site-7" is a semaphore of two permits
// (edgelock_options.permits); each holder has its own lease, renewed while it works.
// Usage: uplink [redis-url [wait-ms [work-ms]]]; exits 0 after its download, 75 when both
// permits stayed taken for the whole wait, 1 on any other failure.
// Build: cc -std=c11 uplink.c $(pkg-config --cflags --libs edgelock-c)
#define _POSIX_C_SOURCE 200809L
#include <edgelock.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void work_for(long ms) {
    struct timespec pause = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&pause, NULL);
}

int main(int argc, char** argv) {
    const char* instances[] = {argc > 1 ? argv[1] : "redis://127.0.0.1:6379"};
    const long wait_ms = argc > 2 ? atol(argv[2]) : 10000;
    const long work_ms = argc > 3 ? atol(argv[3]) : 0;
    edgelock_options options;
    edgelock_options_init(&options, sizeof options);
    options.instances = instances;
    options.instance_count = 1;
    options.name = "uplink:site-7";
    options.permits = 2;

    edgelock_lock* lock;
    int rc = edgelock_open(&options, &lock);
    if (rc == EDGELOCK_OK) rc = edgelock_acquire(lock, wait_ms, NULL);
    if (rc == EDGELOCK_E_BUSY || rc == EDGELOCK_E_WAIT_TIMEOUT) {
        printf("both permits of uplink:site-7 are taken\n");
        edgelock_close(lock);
        return 75;
    }
    if (rc != EDGELOCK_OK) {
        fprintf(stderr, "uplink: %s\n", edgelock_last_error_message());
        edgelock_close(lock);
        return 1;
    }
    printf("holding one of the 2 permits of uplink:site-7\n");
    fflush(stdout);
    work_for(work_ms);  // the download
    rc = edgelock_release(lock);
    edgelock_close(lock);
    return rc == EDGELOCK_OK ? 0 : 1;
}
