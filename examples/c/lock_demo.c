// SPDX-License-Identifier: Apache-2.0
// The C API from C: a program two copies of which exclude each other, whose fence token
// grows from one hold to the next, and which hears (on_lost) when its key is deleted under
// it. tests/capi runs it, and examples/python/lock_demo.py, which prints the same lines,
// against a redis-server of their own.
//
//   lock_demo URL NAME hold STOP_FILE   acquire (wait up to 10 s), print "acquired fence N",
//                                       hold until STOP_FILE exists, release, print "released"
//   lock_demo URL NAME try              one attempt: "busy" (exit 3), or hold and release
//   lock_demo URL NAME lost             acquire, then wait (up to 30 s) for the loss the
//                                       callback reports: "lost: token_gone"
// Each ends with what the lock counted (edgelock_metrics_snapshot):
//   "metrics: acquired A, busy B, token_gone L, released R, expired E"
// Exit status: 0 as described, 3 busy, 1 anything else (its reason on stderr, in the words of
// edgelock_last_error_message()).
// nanosleep() and access() are POSIX, outside strict C11.
#define _POSIX_C_SOURCE 200809L

#include <edgelock.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { exit_busy = 3, hold_ms_max = 60000, lost_wait_ms_max = 30000, poll_interval_ms = 20 };

static atomic_int lost_code;

// Runs on the lock's callback thread: it only records the code for main's polling loop.
static void on_lost(int code, void* user) {
    (void)user;
    atomic_store(&lost_code, code);
}

static void pause_ms(long ms) {
    struct timespec interval = {0, ms * 1000000L};
    nanosleep(&interval, NULL);
}

static int failed(const char* what, const char* why) {
    fprintf(stderr, "lock_demo: %s: %s\n", what, why);
    return 1;
}

// Right after a call failed: its reason in words ("connection refused", which part of a URL is
// wrong), which the code alone does not give.
static int call_failed(const char* what) { return failed(what, edgelock_last_error_message()); }

static int release_and_report(edgelock_lock* lock) {
    const int rc = edgelock_release(lock);
    if (rc != EDGELOCK_OK) return call_failed("release");
    printf("released\n");
    return 0;
}

static int hold_until(edgelock_lock* lock, const char* stop_file) {
    edgelock_hold hold;
    const int rc = edgelock_acquire(lock, 10000, &hold);
    if (rc != EDGELOCK_OK) return call_failed("acquire");
    printf("acquired fence %lld\n", (long long)hold.fence);
    fflush(stdout);
    // The test says when to let go by creating the file; the deadline bounds a lost test.
    const int64_t deadline_ms = edgelock_now_ms() + hold_ms_max;
    while (access(stop_file, F_OK) != 0 && edgelock_now_ms() < deadline_ms) {
        pause_ms(poll_interval_ms);
    }
    return release_and_report(lock);
}

static int try_once(edgelock_lock* lock) {
    edgelock_hold hold;
    const int rc = edgelock_try_acquire(lock, &hold);
    if (rc == EDGELOCK_E_BUSY) {
        printf("busy\n");
        return exit_busy;
    }
    if (rc != EDGELOCK_OK) return call_failed("try_acquire");
    printf("acquired fence %lld\n", (long long)hold.fence);
    return release_and_report(lock);
}

static int wait_for_loss(edgelock_lock* lock) {
    edgelock_hold hold;
    const int rc = edgelock_acquire(lock, 10000, &hold);
    if (rc != EDGELOCK_OK) return call_failed("acquire");
    printf("acquired fence %lld\n", (long long)hold.fence);
    fflush(stdout);
    const int64_t deadline_ms = edgelock_now_ms() + lost_wait_ms_max;
    while (atomic_load(&lost_code) == EDGELOCK_OK && edgelock_now_ms() < deadline_ms) {
        pause_ms(poll_interval_ms);
    }
    const int code = atomic_load(&lost_code);
    if (code == EDGELOCK_OK)
        return failed("no loss reported", edgelock_strerror(EDGELOCK_E_WAIT_TIMEOUT));
    printf("lost: %s\n", edgelock_strerror(code));
    // A lost hold's release says so; either way the lock is free of it.
    const int released = edgelock_release(lock);
    if (released == EDGELOCK_E_EXPIRED) return 0;
    return failed("release after the loss", edgelock_strerror(released));
}

static void print_metrics(const edgelock_lock* lock) {
    edgelock_metrics m;
    if (edgelock_metrics_snapshot(lock, &m, sizeof m) != EDGELOCK_OK) return;
    printf("metrics: %s %llu, %s %llu, %s %llu, %s %llu, %s %llu\n",
           edgelock_acquire_outcome_name(EDGELOCK_ACQUIRE_ACQUIRED),
           (unsigned long long)m.acquires[EDGELOCK_ACQUIRE_ACQUIRED],
           edgelock_acquire_outcome_name(EDGELOCK_ACQUIRE_BUSY),
           (unsigned long long)m.acquires[EDGELOCK_ACQUIRE_BUSY],
           edgelock_loss_cause_name(EDGELOCK_LOSS_TOKEN_GONE),
           (unsigned long long)m.losses[EDGELOCK_LOSS_TOKEN_GONE],
           edgelock_release_outcome_name(EDGELOCK_RELEASE_RELEASED),
           (unsigned long long)m.releases[EDGELOCK_RELEASE_RELEASED],
           edgelock_release_outcome_name(EDGELOCK_RELEASE_EXPIRED),
           (unsigned long long)m.releases[EDGELOCK_RELEASE_EXPIRED]);
}

int main(int argc, char** argv) {
    if (argc < 4 || (strcmp(argv[3], "hold") == 0 && argc < 5)) {
        fprintf(stderr, "usage: lock_demo URL NAME hold STOP_FILE | try | lost\n");
        return 2;
    }
    const char* instances[] = {argv[1]};
    edgelock_options options;
    edgelock_options_init(&options, sizeof options);
    options.instances = instances;
    options.instance_count = 1;
    options.name = argv[2];
    options.fencing = 1;
    options.ttl_ms = 3000;  // renewed every second: a deleted key is noticed within one
    options.on_lost = on_lost;

    edgelock_lock* lock;
    const int rc = edgelock_open(&options, &lock);
    if (rc != EDGELOCK_OK) return call_failed("open");
    int status;
    if (strcmp(argv[3], "hold") == 0) {
        status = hold_until(lock, argv[4]);
    } else if (strcmp(argv[3], "try") == 0) {
        status = try_once(lock);
    } else if (strcmp(argv[3], "lost") == 0) {
        status = wait_for_loss(lock);
    } else {
        fprintf(stderr, "lock_demo: unknown mode %s\n", argv[3]);
        status = 2;
    }
    print_metrics(lock);
    edgelock_close(lock);
    return status;
}
