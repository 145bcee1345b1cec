#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The C API from Python, through ctypes alone: examples/c/lock_demo.c line for line.

    lock_demo.py URL NAME hold STOP_FILE | try | lost

The shared library is $EDGELOCK_C_LIBRARY when set (tests/capi sets it to the build's),
else the system's libedgelock-c.so.0 (the libedgelock-c0 package).
"""
import ctypes
import os
import sys
import threading
import time

EDGELOCK_OK = 0
EDGELOCK_E_BUSY = -10
EDGELOCK_E_WAIT_TIMEOUT = -13
EDGELOCK_E_EXPIRED = -17
EXIT_BUSY = 3

LOST_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p)


class Options(ctypes.Structure):
    """edgelock_options, field for field (edgelock.h); it may only grow at its end."""

    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("instances", ctypes.POINTER(ctypes.c_char_p)),
        ("instance_count", ctypes.c_size_t),
        ("sentinels", ctypes.POINTER(ctypes.c_char_p)),
        ("sentinel_count", ctypes.c_size_t),
        ("master_name", ctypes.c_char_p),
        ("master_user", ctypes.c_char_p),
        ("master_password", ctypes.c_char_p),
        ("master_db", ctypes.c_int),
        ("tls_ca_file", ctypes.c_char_p),
        ("tls_ca_dir", ctypes.c_char_p),
        ("tls_cert_file", ctypes.c_char_p),
        ("tls_key_file", ctypes.c_char_p),
        ("tls_server_name", ctypes.c_char_p),
        ("tls_insecure_skip_verification_for_tests_only", ctypes.c_int),
        ("connect_timeout_ms", ctypes.c_int64),
        ("command_timeout_ms", ctypes.c_int64),
        ("reconnect_delay_min_ms", ctypes.c_int64),
        ("reconnect_delay_max_ms", ctypes.c_int64),
        ("restart_guard", ctypes.c_int),
        ("eviction", ctypes.c_int),
        ("name", ctypes.c_char_p),
        ("ttl_ms", ctypes.c_int64),
        ("fencing", ctypes.c_int),
        ("watchdog", ctypes.c_int),
        ("replicas_to_wait", ctypes.c_int),
        ("replica_wait_ms", ctypes.c_int64),
        ("renew_interval_ms", ctypes.c_int64),
        ("drift_ms", ctypes.c_int64),
        ("attempt_timeout_ms", ctypes.c_int64),
        ("retry_delay_ms_min", ctypes.c_int64),
        ("retry_delay_ms_max", ctypes.c_int64),
        ("fair", ctypes.c_int),
        ("recheck_ms", ctypes.c_int64),
        ("queue_entry_ttl_ms", ctypes.c_int64),
        ("restart_guard_ms", ctypes.c_int64),
        ("on_lost", LOST_CALLBACK),
        ("on_lost_user", ctypes.c_void_p),
    ]


class Histogram(ctypes.Structure):
    _fields_ = [
        ("counts", ctypes.c_uint64 * 15),  # EDGELOCK_LATENCY_BUCKET_COUNT
        ("count", ctypes.c_uint64),
        ("sum_ms", ctypes.c_int64),
    ]


class Metrics(ctypes.Structure):
    """edgelock_metrics; edgelock_metrics_snapshot() fills as many bytes as it is given."""

    _fields_ = [
        ("acquires", ctypes.c_uint64 * 12),  # by edgelock_acquire_outcome
        ("acquire_latency", Histogram),
        ("acquire_wait", Histogram),
        ("handover_gap", Histogram),
        ("renewals_ok", ctypes.c_uint64),
        ("renewals_late", ctypes.c_uint64),
        ("renewal_failures", ctypes.c_uint64),
        ("losses", ctypes.c_uint64 * 4),  # by edgelock_loss_cause
        ("releases", ctypes.c_uint64 * 3),  # by edgelock_release_outcome
        ("connects", ctypes.c_uint64),
        ("reconnects", ctypes.c_uint64),
        ("failovers", ctypes.c_uint64),
        ("requests_in_flight", ctypes.c_uint64),
        ("redirects_moved", ctypes.c_uint64),
        ("redirects_ask", ctypes.c_uint64),
    ]


ACQUIRE_ACQUIRED, ACQUIRE_BUSY = 0, 1
LOSS_TOKEN_GONE = 1
RELEASE_RELEASED, RELEASE_EXPIRED = 0, 1


class Hold(ctypes.Structure):
    _fields_ = [
        ("fence", ctypes.c_int64),
        ("valid_until_ms", ctypes.c_int64),
        ("token", ctypes.c_char * 33),
    ]


def load_library():
    path = os.environ.get("EDGELOCK_C_LIBRARY", "libedgelock-c.so.0")
    lib = ctypes.CDLL(path)
    lib.edgelock_strerror.restype = ctypes.c_char_p
    lib.edgelock_strerror.argtypes = [ctypes.c_int]
    lib.edgelock_last_error_message.restype = ctypes.c_char_p
    lib.edgelock_last_error_message.argtypes = []
    lib.edgelock_options_init.restype = None
    lib.edgelock_options_init.argtypes = [ctypes.POINTER(Options), ctypes.c_size_t]
    lib.edgelock_open.argtypes = [ctypes.POINTER(Options), ctypes.POINTER(ctypes.c_void_p)]
    lib.edgelock_close.restype = None
    lib.edgelock_close.argtypes = [ctypes.c_void_p]
    lib.edgelock_acquire.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.POINTER(Hold)]
    lib.edgelock_try_acquire.argtypes = [ctypes.c_void_p, ctypes.POINTER(Hold)]
    lib.edgelock_release.argtypes = [ctypes.c_void_p]
    lib.edgelock_metrics_snapshot.argtypes = [
        ctypes.c_void_p, ctypes.POINTER(Metrics), ctypes.c_size_t]
    for name in ("acquire_outcome", "loss_cause", "release_outcome"):
        function = getattr(lib, f"edgelock_{name}_name")
        function.restype = ctypes.c_char_p
        function.argtypes = [ctypes.c_size_t]
    return lib


LIB = load_library()


def strerror(code):
    return LIB.edgelock_strerror(code).decode()


def failed(what, why):
    print(f"lock_demo: {what}: {why}", file=sys.stderr)
    return 1


def call_failed(what):
    """Right after a call failed: its reason in words, on the thread that made the call."""
    return failed(what, LIB.edgelock_last_error_message().decode(errors="replace"))


def release_and_report(lock):
    rc = LIB.edgelock_release(lock)
    if rc != EDGELOCK_OK:
        return call_failed("release")
    print("released", flush=True)
    return 0


def acquire_and_say(lock):
    """Waits up to 10 s for the lock and prints its fence: None, or the failure's exit code."""
    hold = Hold()
    if LIB.edgelock_acquire(lock, 10000, ctypes.byref(hold)) != EDGELOCK_OK:
        return call_failed("acquire")
    print(f"acquired fence {hold.fence}", flush=True)
    return None


def hold_until(lock, stop_file):
    failure = acquire_and_say(lock)
    if failure is not None:
        return failure
    deadline = time.monotonic() + 60
    while not os.path.exists(stop_file) and time.monotonic() < deadline:
        time.sleep(0.02)
    return release_and_report(lock)


def try_once(lock):
    hold = Hold()
    rc = LIB.edgelock_try_acquire(lock, ctypes.byref(hold))
    if rc == EDGELOCK_E_BUSY:
        print("busy", flush=True)
        return EXIT_BUSY
    if rc != EDGELOCK_OK:
        return call_failed("try_acquire")
    print(f"acquired fence {hold.fence}", flush=True)
    return release_and_report(lock)


def wait_for_loss(lock, lost):
    failure = acquire_and_say(lock)
    if failure is not None:
        return failure
    if not lost["event"].wait(timeout=30):
        return failed("no loss reported", strerror(EDGELOCK_E_WAIT_TIMEOUT))
    print(f"lost: {strerror(lost['code'])}", flush=True)
    released = LIB.edgelock_release(lock)
    if released == EDGELOCK_E_EXPIRED:
        return 0
    return failed("release after the loss", strerror(released))


def print_metrics(lock):
    m = Metrics()
    if LIB.edgelock_metrics_snapshot(lock, ctypes.byref(m), ctypes.sizeof(m)) != EDGELOCK_OK:
        return
    counted = [
        (LIB.edgelock_acquire_outcome_name(ACQUIRE_ACQUIRED), m.acquires[ACQUIRE_ACQUIRED]),
        (LIB.edgelock_acquire_outcome_name(ACQUIRE_BUSY), m.acquires[ACQUIRE_BUSY]),
        (LIB.edgelock_loss_cause_name(LOSS_TOKEN_GONE), m.losses[LOSS_TOKEN_GONE]),
        (LIB.edgelock_release_outcome_name(RELEASE_RELEASED), m.releases[RELEASE_RELEASED]),
        (LIB.edgelock_release_outcome_name(RELEASE_EXPIRED), m.releases[RELEASE_EXPIRED]),
    ]
    print("metrics: " + ", ".join(f"{name.decode()} {count}" for name, count in counted),
          flush=True)


def run(lock, argv, lost):
    if argv[3] == "hold":
        return hold_until(lock, argv[4])
    if argv[3] == "try":
        return try_once(lock)
    if argv[3] == "lost":
        return wait_for_loss(lock, lost)
    print(f"lock_demo.py: unknown mode {argv[3]}", file=sys.stderr)
    return 2


def main(argv):
    if len(argv) < 4 or (argv[3] == "hold" and len(argv) < 5):
        print("usage: lock_demo.py URL NAME hold STOP_FILE | try | lost", file=sys.stderr)
        return 2
    lost = {"event": threading.Event(), "code": EDGELOCK_OK}

    # Runs on the lock's callback thread (ctypes takes the GIL for it).
    def on_lost(code, _user):
        lost["code"] = code
        lost["event"].set()

    callback = LOST_CALLBACK(on_lost)  # kept alive until the lock is closed
    instances = (ctypes.c_char_p * 1)(argv[1].encode())
    options = Options()
    LIB.edgelock_options_init(ctypes.byref(options), ctypes.sizeof(options))
    options.instances = instances
    options.instance_count = 1
    options.name = argv[2].encode()
    options.fencing = 1
    options.ttl_ms = 3000  # renewed every second: a deleted key is noticed within one
    options.on_lost = callback

    lock = ctypes.c_void_p()
    rc = LIB.edgelock_open(ctypes.byref(options), ctypes.byref(lock))
    if rc != EDGELOCK_OK:
        return call_failed("open")
    try:
        status = run(lock, argv, lost)
        print_metrics(lock)
        return status
    finally:
        LIB.edgelock_close(lock)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
