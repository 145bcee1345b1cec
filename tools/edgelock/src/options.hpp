// SPDX-License-Identifier: Apache-2.0
// edgelock CLI: the command line, parsed into one struct or one error.
//
// Parsing is pure (no I/O, no getenv): the environment comes in as a struct, so every rule
// is unit-tested (tests/cli/cli_options_test.cpp). An error is one line naming the problem
// and the flag, with exit code exit_usage; main() prints it after "edgelock: ".
#pragma once

#include <csignal>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "edgelock/lock.hpp"
#include "edgelock/session/reconnect.hpp"
#include "edgelock/tls_options.hpp"

namespace edgelock::cli {

enum class command { help, version, run, status, release, sim, check, hold, list };

// Limits of the values the CLI accepts. --ttl has no limits of its own: the parser accepts
// exactly the TTLs lock::configure accepts (see run_lock_config).
inline constexpr std::int64_t duration_ms_max =
    24LL * 60 * 60 * 1000;  // the core's ttl and wait max
inline constexpr std::int64_t redis_timeout_ms_max = session::timeout_ms_max;
inline constexpr std::size_t redis_urls_max = 7;  // edgelock::instances_max
inline constexpr std::size_t env_name_bytes_max = 128;
// The shortest --ttl of run and hold, above what lock::configure accepts (a few ms): each
// attempt has ttl/10 to hear Redis (lock.hpp), and below 10 ms that is less than a script's
// round trip takes on a busy gateway (on loopback, --ttl 20ms already fails one run in five,
// 10ms every one), so a shorter lease could only ever fail.
inline constexpr std::int64_t ttl_ms_min = 100;

// What the environment may supply; flags win over it.
// The deployment variables are optional: one that is set but names no address (empty, or only
// separators) is refused, never read as unset (that would fall back to 127.0.0.1:6379).
struct environment {
    std::optional<std::string> redis;     // EDGELOCK_REDIS: URLs separated by commas or spaces
    std::optional<std::string> sentinel;  // EDGELOCK_SENTINEL: sentinel addresses, same separators
    std::optional<std::string> cluster;   // EDGELOCK_CLUSTER: cluster seed addresses, the same
    std::string master;                   // EDGELOCK_MASTER: the master name the sentinels monitor
    // EDGELOCK_TLS_CA, EDGELOCK_TLS_CA_DIR, EDGELOCK_TLS_CERT, EDGELOCK_TLS_KEY,
    // EDGELOCK_TLS_SERVER_NAME: for rediss:// addresses, each overridden by its flag.
    tls_options tls;
    std::string wait_replicas;          // EDGELOCK_WAIT_REPLICAS: as --wait-replicas
    std::string wait_replicas_timeout;  // EDGELOCK_WAIT_REPLICAS_TIMEOUT: as its flag
    std::string password;               // EDGELOCK_PASSWORD: as the content of --password-file
};

// flock(1)'s -E: the code of a busy lock (75) and of a wait that ran out (79) when set.
inline constexpr int conflict_exit_code_unset = -1;

struct options {
    enum command command = command::help;
    std::string help_topic;  // command::help: "" for the overview, or "run", "status", ...

    std::string name;                     // the lock name (the Redis key)
    std::vector<std::string> redis_urls;  // 1, or an odd count up to 7 (Redlock)
    std::vector<std::string> sentinel_urls;
    std::vector<std::string> cluster_urls;  // Redis Cluster seeds, up to cluster_seeds_max
    std::string master_name;
    tls_options tls;  // --tls-ca, --tls-ca-dir, --tls-cert, --tls-key, --tls-server-name
    std::int64_t ttl_ms = 30'000;
    std::int64_t wait_ms = 10'000;
    std::int64_t redis_timeout_ms =
        session::timing{}.command_timeout_ms;  // connect and per-reply timeout
    std::string fence_env = "EDGELOCK_FENCE";
    int lost_signal = SIGTERM;
    std::int64_t kill_after_ms = 10'000;  // then SIGKILL
    std::string token;                    // release: the holder's token
    bool restart_guard = true;  // run, check: --restart-guard on|off (lock.hpp, "Restarts")
    bool fencing = true;        // check: --fencing on|off (run always fences)
    // run, hold, check: --permits N, at most N holders at once (a semaphore: lock.hpp,
    // "Semaphores"); 1 is the lock.
    std::uint16_t permits = 1;
    std::uint8_t replicas_to_wait = 0;  // run, hold, check: --wait-replicas N (Sentinel's WAIT)
    std::int64_t replica_wait_ms = 0;   // --wait-replicas-timeout; 0: the core's default
    bool json = false;                  // check, status: --json
    std::string prefix;                 // list: --prefix P, the keys examined (MATCH P*)
    bool fair = true;                   // run: false with --unfair (one instance only: lock.hpp)
    int conflict_exit_code = conflict_exit_code_unset;  // run, hold: -E / --conflict-exit-code
    bool verbose = false;                               // run, hold: -v / --verbose
    // run, hold: --metrics-file PATH, the lock's metrics for node_exporter (metrics_file.hpp);
    // empty: none. Whether its directory exists is checked by run_locked, not the parser.
    std::string metrics_file;
    // --password-file FILE (read by main(), which the parser leaves I/O to) or EDGELOCK_PASSWORD:
    // fills every address without credentials (with_password). The flag wins.
    std::string password_file;
    std::string password;

    std::vector<std::string> program;  // run: CMD and its arguments; sim: edgelock-sim's arguments
};

struct parse_result {
    int exit_code = 0;  // 0, or exit_usage
    std::string error;  // one line, when exit_code != 0
    options parsed;
};

// args: argv[1..] (without the program name). For `run`, the lock the options describe
// must pass lock::configure (run_lock_config below), or it is a usage error naming the flag
// and, for --ttl, the range the lock accepts.
parse_result parse_command_line(const std::vector<std::string>& args, const environment& env);

// The core configuration of `edgelock run`'s lock: the name, TTL, permits and deployment of
// `o`, fence tokens on, the watchdog on, the restart guard as --restart-guard says, fair
// waiting with one instance unless --unfair, every other field the core's default. run.cpp
// hands exactly these to the hiredis transport, and the parser checks them with
// lock::configure on a scratch lock, so the command line and the lock cannot disagree.
// `name` points into `o`.
lock_config run_lock_config(const options& o);

// "0", "500ms", "30s", "2m", "1h", "1m30s", "1h2m3s" -> milliseconds: integers with units, the
// units in decreasing order (h, m, s, ms), each at most once. False for anything else (no
// unit, a negative or fractional number, an unknown unit, more than duration_ms_max).
bool parse_duration(std::string_view text, std::int64_t& ms);

// parse_duration without the duration_ms_max bound (false only when the milliseconds would
// not fit an int64), so a flag can say its own range.
bool parse_duration_unbounded(std::string_view text, std::int64_t& ms);

// 1500 -> "1.5s", 120000 -> "2m", 250 -> "250ms": the shortest exact form for messages.
std::string format_duration(std::int64_t ms);

// "TERM", "SIGTERM", "15" -> 15. False for unknown names and numbers outside 1..64.
bool parse_signal(std::string_view text, int& signal);

// 15 -> "SIGTERM"; numbers without a name -> "signal 40".
std::string signal_name(int signal);

// `url` with `password` as its password when it carries no credentials (no '@'); as it is
// otherwise. "host:port" becomes "redis://:password@host:port".
std::string with_password(std::string_view url, std::string_view password);

// Fills o.password into every --redis, --sentinel and --cluster address without credentials.
void apply_password(options& o);

// Splits EDGELOCK_REDIS-style lists on commas and whitespace, dropping empty parts.
std::vector<std::string> split_list(std::string_view text);

}  // namespace edgelock::cli
