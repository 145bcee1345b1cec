/* SPDX-License-Identifier: Apache-2.0 */
/* A user's C program on the installed packages: edgelock.h from libedgelock-dev, linked with
 * `pkg-config --cflags --libs edgelock-c` against libedgelock-c0's shared library. Takes the
 * lock once against the Redis at argv[1], with a fence token, and checks what the lock
 * counted. Exits 0 when all held. */
#include <edgelock.h>
#include <stdio.h>
#include <string.h>

static int fail(const char* what, int rc) {
    fprintf(stderr, "c consumer: %s: %s\n", what, edgelock_strerror(rc));
    return 1;
}

int main(int argc, char** argv) {
    if (argc != 2) return fail("usage: c_lock URL", EDGELOCK_E_INVALID_ARGUMENT);
    const char* instances[] = {argv[1]};
    edgelock_options options;
    edgelock_options_init(&options, sizeof options);
    options.instances = instances;
    options.instance_count = 1;
    options.name = "package:c";
    options.fencing = 1;
    edgelock_lock* lock;
    int rc = edgelock_open(&options, &lock);
    if (rc != EDGELOCK_OK) return fail("open", rc);
    edgelock_hold hold;
    rc = edgelock_acquire(lock, 5000, &hold);
    if (rc != EDGELOCK_OK) return fail("acquire", rc);
    if (hold.fence < 1 || !edgelock_held(lock) || strlen(hold.token) != 32) {
        return fail("the hold is not what was acquired", EDGELOCK_E_UNKNOWN);
    }
    rc = edgelock_release(lock);
    if (rc != EDGELOCK_OK) return fail("release", rc);
    edgelock_metrics m;
    rc = edgelock_metrics_snapshot(lock, &m, sizeof m);
    if (rc != EDGELOCK_OK) return fail("metrics", rc);
    if (m.acquires[EDGELOCK_ACQUIRE_ACQUIRED] != 1 || m.releases[EDGELOCK_RELEASE_RELEASED] != 1) {
        return fail("the metrics do not count the hold", EDGELOCK_E_UNKNOWN);
    }
    edgelock_close(lock);
    printf("c consumer: libedgelock-c %s, fence %lld\n", edgelock_version(), (long long)hold.fence);
    return 0;
}
