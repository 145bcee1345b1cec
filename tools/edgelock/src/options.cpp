// SPDX-License-Identifier: Apache-2.0
#include "options.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <csignal>
#include <limits>

#include "edgelock/keys.hpp"
#include "edgelock/limits.hpp"
#include "edgelock/session/address.hpp"
#include "edgelock/session/limits.hpp"
#include "exit_codes.hpp"
#include "quote.hpp"

namespace edgelock::cli {
namespace {

static_assert(duration_ms_max == ttl_ms_max && duration_ms_max == wait_ms_max,
              "durations parse up to the core's ttl and wait bounds");

constexpr std::string_view default_redis_url = "redis://127.0.0.1:6379";

// How far up the parser looks for the smallest TTL the lock accepts (a few ms today).
constexpr std::int64_t ttl_search_ms_max = 1'000;

struct duration_range {
    std::int64_t min_ms;
    std::int64_t max_ms;
};

constexpr duration_range wait_range{0, wait_ms_max};
constexpr duration_range kill_after_range{0, duration_ms_max};
constexpr duration_range redis_timeout_range{1, redis_timeout_ms_max};
constexpr duration_range replica_wait_range{
    1, duration_ms_max};  // then below the attempt (check_replica_wait)
constexpr int exit_code_max = 255;

// Which commands accept a flag, as a bit mask of command values.
constexpr unsigned bit(command c) { return 1U << static_cast<unsigned>(c); }
constexpr unsigned for_run = bit(command::run);
constexpr unsigned for_acquire =
    bit(command::run) | bit(command::hold);  // the commands that take the lock
constexpr unsigned for_check = bit(command::check);
constexpr unsigned for_list = bit(command::list);
constexpr unsigned for_lock_commands =
    for_acquire | bit(command::status) | bit(command::release) | for_check | for_list;

enum class flag_id {
    help,
    name,
    ttl,
    wait,
    redis,
    sentinel,
    cluster,
    master,
    fence_env,
    on_lost,
    kill_after,
    redis_timeout,
    token,
    restart_guard,
    fencing,
    wait_replicas,
    json,
    unfair,
    tls_ca,
    tls_ca_dir,
    tls_cert,
    tls_key,
    tls_server_name,
    wait_replicas_timeout,
    no_wait,
    conflict_exit_code,
    shell_command,
    password_file,
    verbose,
    prefix,
    metrics_file,
    permits
};

struct flag_spec {
    std::string_view text;
    flag_id id;
    bool takes_value;
    unsigned commands;
};

constexpr std::array<flag_spec, 37> flags{{
    {"--help", flag_id::help, false, for_lock_commands},
    {"-h", flag_id::help, false, for_lock_commands},
    {"--name", flag_id::name, true, for_lock_commands & ~for_list},
    {"--ttl", flag_id::ttl, true, for_acquire | for_check},
    {"--wait", flag_id::wait, true, for_acquire},
    {"-w", flag_id::wait, true, for_acquire},
    {"-n", flag_id::no_wait, false, for_acquire},
    {"--conflict-exit-code", flag_id::conflict_exit_code, true, for_acquire},
    {"-E", flag_id::conflict_exit_code, true, for_acquire},
    {"-c", flag_id::shell_command, true, for_run},
    {"--password-file", flag_id::password_file, true, for_lock_commands},
    {"--verbose", flag_id::verbose, false, for_acquire},
    {"-v", flag_id::verbose, false, for_acquire},
    {"--metrics-file", flag_id::metrics_file, true, for_acquire},
    {"--wait-replicas-timeout", flag_id::wait_replicas_timeout, true, for_acquire | for_check},
    {"--redis", flag_id::redis, true, for_lock_commands},
    {"--sentinel", flag_id::sentinel, true, for_lock_commands},
    {"--cluster", flag_id::cluster, true, for_lock_commands},
    {"--master", flag_id::master, true, for_lock_commands},
    {"--fence-env", flag_id::fence_env, true, for_run},
    {"--on-lost", flag_id::on_lost, true, for_run},
    {"--kill-after", flag_id::kill_after, true, for_run},
    {"--redis-timeout", flag_id::redis_timeout, true, for_lock_commands},
    {"--token", flag_id::token, true, bit(command::release)},
    {"--restart-guard", flag_id::restart_guard, true, for_acquire | for_check},
    {"--fencing", flag_id::fencing, true, for_check},
    {"--permits", flag_id::permits, true, for_acquire | for_check},
    {"--wait-replicas", flag_id::wait_replicas, true, for_acquire | for_check},
    {"--json", flag_id::json, false, for_check | bit(command::status)},
    {"--prefix", flag_id::prefix, true, for_list},
    {"--unfair", flag_id::unfair, false, for_acquire | for_check},
    {"--tls-ca", flag_id::tls_ca, true, for_lock_commands},
    {"--tls-ca-dir", flag_id::tls_ca_dir, true, for_lock_commands},
    {"--tls-cert", flag_id::tls_cert, true, for_lock_commands},
    {"--tls-key", flag_id::tls_key, true, for_lock_commands},
    {"--tls-server-name", flag_id::tls_server_name, true, for_lock_commands},
}};

const flag_spec* find_flag(std::string_view text) {
    for (const flag_spec& f : flags) {
        if (f.text == text) return &f;
    }
    return nullptr;
}

std::string command_name(command c) {
    switch (c) {
        case command::run: return "run";
        case command::status: return "status";
        case command::release: return "release";
        case command::sim: return "sim";
        case command::check: return "check";
        case command::hold: return "hold";
        case command::list: return "list";
        case command::help: return "help";
        case command::version: return "version";
    }
    return "";
}

bool valid_env_name(std::string_view name) {
    if (name.empty() || name.size() > env_name_bytes_max) return false;
    for (std::size_t i = 0; i < name.size(); ++i) {
        const char c = name[i];
        const bool letter = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
        const bool digit = c >= '0' && c <= '9';
        if (!letter && !(digit && i > 0)) return false;
    }
    return true;
}

parse_result usage_error(std::string message) {
    parse_result r;
    r.exit_code = exit_usage;
    r.error = std::move(message);
    return r;
}

parse_result help_for(command c) {
    parse_result r;
    r.parsed.command = command::help;
    r.parsed.help_topic = c == command::help ? "" : command_name(c);
    return r;
}

// Checks each URL; the first bad one becomes the error.
// An address as a message shows it: whatever parse_node_url would take for credentials
// (after the scheme, up to the last '@') becomes "***", so a mistyped address does not put
// its password in a log.
std::string without_credentials(std::string_view url) {
    const std::size_t scheme_end = url.find("://");
    const std::size_t start = scheme_end == std::string_view::npos ? 0 : scheme_end + 3;
    const std::size_t at = url.rfind('@');
    if (at == std::string_view::npos || at < start) return std::string(url);
    return std::string(url.substr(0, start)) + "***" + std::string(url.substr(at));
}

std::string check_urls(const std::vector<std::string>& urls, std::string_view flag) {
    for (const std::string& url : urls) {
        session::node_address address;
        const session::address_result parsed = session::parse_node_url(url, address);
        if (parsed.code != errc::ok) {
            return "bad " + std::string(flag) + " address " + quote(without_credentials(url)) +
                   ": " + parsed.problem;
        }
    }
    return "";
}

// The address `urls` name twice (same host and port, whatever the credentials or database),
// as a message; "" when each names its own. Redlock would count one server twice toward its
// quorum; a second sentinel or seed on the same address is a typo all the same.
std::string repeated_address(const std::vector<std::string>& urls, std::string_view source) {
    std::vector<session::node_address> seen;
    for (const std::string& url : urls) {
        session::node_address address;
        static_cast<void>(session::parse_node_url(url, address));  // check_urls accepted it
        for (const session::node_address& earlier : seen) {
            if (!address.same_node(earlier)) continue;
            return std::string(source) + " names " + quote(without_credentials(url)) +
                   " twice: each address must be a different server (host and port)";
        }
        seen.push_back(address);
    }
    return "";
}

// The seeds of a cluster: checked as the other addresses, at most cluster_seeds_max of them,
// none naming a database (a cluster has only database 0: SELECT fails on every node).
std::string resolve_cluster(options& o, bool flags_given) {
    if (flags_given && !o.master_name.empty()) return "--master needs --sentinel";
    o.master_name.clear();
    const std::string source = flags_given ? "--cluster" : "EDGELOCK_CLUSTER";
    if (o.cluster_urls.size() > session::cluster_seeds_max) {
        return "too many " + source + " addresses (at most " +
               std::to_string(session::cluster_seeds_max) + ")";
    }
    if (std::string problem = check_urls(o.cluster_urls, source); !problem.empty()) return problem;
    if (std::string problem = repeated_address(o.cluster_urls, source); !problem.empty())
        return problem;
    for (const std::string& url : o.cluster_urls) {
        session::node_address address;
        static_cast<void>(session::parse_node_url(url, address));
        if (address.db != 0) {
            return "bad " + source + " address " + quote(without_credentials(url)) +
                   ": a cluster has only database 0";
        }
    }
    return "";
}

// A deployment variable that is set names at least one address.
std::string empty_deployment_variable(const environment& env) {
    const struct {
        const char* name;
        const std::optional<std::string>& value;
    } variables[] = {{"EDGELOCK_REDIS", env.redis},
                     {"EDGELOCK_SENTINEL", env.sentinel},
                     {"EDGELOCK_CLUSTER", env.cluster}};
    for (const auto& variable : variables) {
        if (variable.value && split_list(*variable.value).empty()) {
            return std::string(variable.name) +
                   " is set but names no address: unset it, or give host:port";
        }
    }
    return "";
}

// The deployment variables, when no flag names one: at most one of them may be set.
std::string one_deployment_variable(const options& o) {
    const bool redis = !o.redis_urls.empty();
    const bool sentinel = !o.sentinel_urls.empty();
    const bool cluster = !o.cluster_urls.empty();
    if (redis && sentinel)
        return "EDGELOCK_REDIS and EDGELOCK_SENTINEL are both set: use one of them";
    if (cluster && (redis || sentinel)) {
        return std::string("EDGELOCK_CLUSTER and ") +
               (redis ? "EDGELOCK_REDIS" : "EDGELOCK_SENTINEL") + " are both set: use one of them";
    }
    return "";
}

// Chooses the Redis deployment: flags, else the environment, else the local default.
std::string resolve_servers(options& o, const environment& env) {
    const bool flags_given =
        !o.redis_urls.empty() || !o.sentinel_urls.empty() || !o.cluster_urls.empty();
    if (!flags_given) {
        if (std::string problem = empty_deployment_variable(env); !problem.empty()) return problem;
        o.redis_urls = split_list(env.redis.value_or(""));
        o.sentinel_urls = split_list(env.sentinel.value_or(""));
        o.cluster_urls = split_list(env.cluster.value_or(""));
        if (o.master_name.empty()) o.master_name = env.master;
        if (std::string problem = one_deployment_variable(o); !problem.empty()) return problem;
    }
    if (!o.redis_urls.empty() && !o.sentinel_urls.empty()) {
        return "use either --redis or --sentinel, not both";
    }
    if (!o.cluster_urls.empty()) {
        if (!o.redis_urls.empty()) return "use either --redis or --cluster, not both";
        if (!o.sentinel_urls.empty()) return "use either --sentinel or --cluster, not both";
        return resolve_cluster(o, flags_given);
    }
    if (!o.sentinel_urls.empty()) {
        if (o.master_name.empty()) return "--sentinel needs --master NAME (or EDGELOCK_MASTER)";
        if (o.sentinel_urls.size() > redis_urls_max)
            return "too many --sentinel addresses (at most 7)";
        const std::string_view source = flags_given ? "--sentinel" : "EDGELOCK_SENTINEL";
        if (std::string problem = check_urls(o.sentinel_urls, source); !problem.empty())
            return problem;
        return repeated_address(o.sentinel_urls, source);
    }
    if (flags_given && !o.master_name.empty()) return "--master needs --sentinel";
    o.master_name.clear();
    if (o.redis_urls.empty()) o.redis_urls.emplace_back(default_redis_url);
    const std::string_view source = flags_given ? "--redis" : "EDGELOCK_REDIS";
    if (std::string problem = check_urls(o.redis_urls, source); !problem.empty()) return problem;
    if (std::string problem = repeated_address(o.redis_urls, source); !problem.empty())
        return problem;
    if (o.redis_urls.size() > redis_urls_max || o.redis_urls.size() % 2 == 0) {
        return "Redlock needs an odd number of " + std::string(source) +
               " addresses, up to 7 (got " + std::to_string(o.redis_urls.size()) + ")";
    }
    return "";
}

std::string& tls_field(tls_options& tls, flag_id id) {
    switch (id) {
        case flag_id::tls_ca: return tls.ca_file;
        case flag_id::tls_ca_dir: return tls.ca_dir;
        case flag_id::tls_cert: return tls.cert_file;
        case flag_id::tls_key: return tls.key_file;
        default: return tls.server_name;
    }
}

bool any_tls_address(const options& o) {
    for (const std::vector<std::string>* urls :
         {&o.redis_urls, &o.sentinel_urls, &o.cluster_urls}) {
        for (const std::string& url : *urls) {
            session::node_address address;
            if (session::parse_node_url(url, address).code == errc::ok && address.tls) return true;
        }
    }
    return false;
}

// The TLS options: each flag, else its variable. A flag without a rediss:// address to apply
// to is a mistake worth saying (the connection would be plain); a variable may be set for
// other deployments, and is then left unused.
std::string resolve_tls(options& o, const environment& env) {
    const bool flags_given = !o.tls.ca_file.empty() || !o.tls.ca_dir.empty() ||
                             !o.tls.cert_file.empty() || !o.tls.key_file.empty() ||
                             !o.tls.server_name.empty();
    if (!any_tls_address(o)) {
        if (flags_given) return "--tls-* flags apply to rediss:// addresses, and none is given";
        o.tls = tls_options{};  // variables meant for another deployment: unused here
        return "";
    }
    tls_options from_env = env.tls;
    for (const flag_id id : {flag_id::tls_ca, flag_id::tls_ca_dir, flag_id::tls_server_name}) {
        std::string& field = tls_field(o.tls, id);
        if (field.empty()) field = tls_field(from_env, id);
    }
    // The certificate and its key come together, from the flags or from the environment,
    // never one from each (that would pair a certificate with another deployment's key).
    if (o.tls.cert_file.empty() && o.tls.key_file.empty()) {
        o.tls.cert_file = from_env.cert_file;
        o.tls.key_file = from_env.key_file;
    }
    if (o.tls.cert_file.empty() != o.tls.key_file.empty()) {
        return "--tls-cert and --tls-key go together (or EDGELOCK_TLS_CERT and EDGELOCK_TLS_KEY)";
    }
    return "";
}

std::string check_required(const options& o) {
    if (o.command == command::check || o.command == command::list) return "";  // not one lock
    if (o.name.empty()) return "missing --name";
    if (o.name.size() > name_bytes_max) return "--name is longer than 128 bytes";
    if (o.command == command::run && o.program.empty()) {
        return "missing CMD: edgelock run --name N [flags] -- CMD [ARGS...] (or -c 'shell "
               "command')";
    }
    if (o.command == command::release && o.token.empty()) return "missing --token";
    return "";
}

std::string out_of_range(std::string_view flag, duration_range range, std::int64_t ms) {
    return std::string(flag) + " must be between " + format_duration(range.min_ms) + " and " +
           format_duration(range.max_ms) + " (got " + format_duration(ms) + ")";
}

// Stores a duration flag's value, within its range. Returns an error message, or "".
std::string apply_duration(std::int64_t& out_ms, std::string_view flag, duration_range range,
                           std::int64_t ms) {
    if (ms < range.min_ms || ms > range.max_ms) return out_of_range(flag, range, ms);
    out_ms = ms;
    return "";
}

// What lock::configure says to `edgelock run`'s lock with this TTL; nothing else is touched.
errc configure_scratch(const options& o, std::int64_t ttl_ms) {
    lock_config config = run_lock_config(o);
    config.ttl_ms = ttl_ms;
    lock scratch;
    return scratch.configure(config);
}

// The TTLs the lock accepts for this deployment, found by asking it; min_ms is 0 when none
// up to ttl_search_ms_max is.
duration_range accepted_ttls(const options& o) {
    duration_range range{0, ttl_ms_max};
    for (std::int64_t ttl = ttl_ms_min; ttl <= ttl_search_ms_max && range.min_ms == 0; ++ttl) {
        if (configure_scratch(o, ttl) == errc::ok) range.min_ms = ttl;
    }
    return range;
}

// Why a companion key is refused as a lock name. A fence key is the part before ":fence"
// with it; a line or owner key (keys.hpp) names its lock after its first tag, or is that tag
// when nothing follows it. Other names of that form (a line key of the older layout) are
// refused all the same.
std::string companion_key_problem(const std::string& name) {
    const std::size_t colon = name.rfind(':');
    const std::string_view stem = std::string_view(name).substr(0, colon);
    const std::string_view suffix = std::string_view(name).substr(colon);
    if (is_fence_key(name)) {
        return "--name " + quote(name) + " is the fence key of lock " + quote(stem) +
               "; use another name";
    }
    const std::string role = suffix == ":owner" ? "owner key" : "queue key";
    const std::size_t close = stem.find('}');
    if (stem.empty() || stem[0] != '{' || close == std::string_view::npos) {
        return "--name " + quote(name) + " has the form of a lock's " + role + "; use another name";
    }
    const std::string_view rest = stem.substr(close + 1);
    const std::string_view owner = rest.empty() ? stem.substr(1, close - 1) : rest;
    return "--name " + quote(name) + " is the " + role + " of lock " + quote(owner) +
           "; use another name";
}

// Refuses here, as a usage error, what `edgelock run` would otherwise learn only from
// lock::configure once started: a TTL too short for the lease arithmetic, a fence or queue key as
// name.
std::string check_lock(const options& o) {
    if (o.ttl_ms < ttl_ms_min) {
        return out_of_range("--ttl", accepted_ttls(o), o.ttl_ms) +
               ": a shorter lease leaves each attempt under 10ms (ttl/10) to hear Redis";
    }
    const errc code = configure_scratch(o, o.ttl_ms);
    if (code == errc::ok) return "";
    if (code == errc::invalid_name && is_companion_key(o.name))
        return companion_key_problem(o.name);
    if (code == errc::invalid_ttl || code == errc::invalid_config) {
        const duration_range range = accepted_ttls(o);
        if (range.min_ms > 0 && (o.ttl_ms < range.min_ms || o.ttl_ms > range.max_ms)) {
            return out_of_range("--ttl", range, o.ttl_ms);
        }
    }
    return "the lock refuses --name " + quote(o.name) + " with --ttl " + format_duration(o.ttl_ms) +
           " (" + to_string(code) + ")";
}

// WAIT's timeout must end within the attempt's reply budget (lock.hpp: the attempt timeout,
// ttl/10 by default, which the CLI does not change) and within one reply's wait, --redis-timeout
// (both clients refuse a WAIT timeout not below the command timeout: deployment.hpp,
// check_lock). The values are the core's (resolve); the message names the flag to change.
std::string check_replica_wait(const options& o) {
    if (o.replicas_to_wait == 0) {
        if (o.replica_wait_ms == 0) return "";
        return "--wait-replicas-timeout needs --wait-replicas N (N > 0)";
    }
    const lock_config resolved = resolve(run_lock_config(o));
    const std::int64_t attempt_ms = resolved.attempt_timeout_ms;
    const bool given = o.replica_wait_ms > 0;
    const std::int64_t wait_ms = resolved.replica_wait_ms;
    const std::string what = given ? "--wait-replicas-timeout " + format_duration(wait_ms)
                                   : "the WAIT timeout " + format_duration(wait_ms) +
                                         " (half of --ttl/10; set --wait-replicas-timeout)";
    if (wait_ms < 1) return what + " is below 1ms: raise --ttl or set --wait-replicas-timeout";
    if (wait_ms >= attempt_ms) {
        return what +
               " must be below the attempt timeout, --ttl/10 = " + format_duration(attempt_ms);
    }
    if (wait_ms >= o.redis_timeout_ms) {
        return what + " must be below --redis-timeout " + format_duration(o.redis_timeout_ms);
    }
    return "";
}

// -E CODE: 0..255, the range of an exit status.
std::string apply_exit_code(options& o, std::string_view text) {
    int code = -1;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), code);
    if (error != std::errc{} || end != text.data() + text.size() || code < 0 ||
        code > exit_code_max) {
        return "bad --conflict-exit-code " + quote(text) + " (an exit code, 0 to 255)";
    }
    o.conflict_exit_code = code;
    return "";
}

// --permits N: 1 (the lock) up to the core's permits_max.
std::string apply_permits(options& o, std::string_view text) {
    unsigned permits = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), permits);
    if (error != std::errc{} || end != text.data() + text.size() || permits < 1 ||
        permits > permits_max) {
        return "bad --permits " + quote(text) + " (a count, 1 to " + std::to_string(permits_max) +
               ")";
    }
    o.permits = static_cast<std::uint16_t>(permits);
    return "";
}

// A semaphore (--permits above 1) lives on one Redis, behind Sentinel or in a cluster
// (lock.hpp, "Semaphores").
std::string check_permits(const options& o) {
    if (o.permits == 1) return "";
    if (o.redis_urls.size() > 1) {
        return "--permits " + std::to_string(o.permits) +
               " needs one Redis, Sentinel or a cluster: Redlock's majorities do not bound the "
               "holders to N";
    }
    if (o.fence_env == "EDGELOCK_PERMIT")
        return "--fence-env EDGELOCK_PERMIT is where a semaphore's CMD gets its permit";
    return "";
}

// A flag whose value is a duration.
std::string apply_duration_flag(options& o, const flag_spec& f, const std::string& value) {
    std::int64_t ms = 0;
    if (!parse_duration_unbounded(value, ms)) {
        return "bad duration " + quote(value) + " for " + std::string(f.text) +
               " (use 500ms, 30s, 2m, 1m30s)";
    }
    switch (f.id) {
        case flag_id::ttl: o.ttl_ms = ms; return "";  // check_lock() asks the lock
        case flag_id::wait: return apply_duration(o.wait_ms, f.text, wait_range, ms);
        case flag_id::wait_replicas_timeout:
            return apply_duration(o.replica_wait_ms, f.text, replica_wait_range, ms);
        case flag_id::kill_after:
            return apply_duration(o.kill_after_ms, f.text, kill_after_range, ms);
        default: return apply_duration(o.redis_timeout_ms, f.text, redis_timeout_range, ms);
    }
}

// Applies one flag's value. Returns an error message, or "" when accepted.
std::string apply(options& o, const flag_spec& f, const std::string& value) {
    switch (f.id) {
        case flag_id::no_wait: o.wait_ms = 0; return "";
        case flag_id::verbose: o.verbose = true; return "";
        case flag_id::conflict_exit_code: return apply_exit_code(o, value);
        case flag_id::shell_command:
            if (value.empty()) return "-c needs a shell command";
            o.program = {"/bin/sh", "-c", value};
            return "";
        case flag_id::password_file:
            if (value.empty()) return "--password-file needs a file";
            o.password_file = value;
            return "";
        case flag_id::metrics_file:
            if (value.empty()) return "--metrics-file needs a file";
            o.metrics_file = value;
            return "";
        case flag_id::help: return "";
        case flag_id::name: o.name = value; return "";
        case flag_id::redis: o.redis_urls.push_back(value); return "";
        case flag_id::sentinel:  // a list, as EDGELOCK_SENTINEL takes it: no address has a comma
            for (std::string& url : split_list(value)) o.sentinel_urls.push_back(std::move(url));
            return "";
        case flag_id::cluster:  // a list too, as EDGELOCK_CLUSTER takes it
            for (std::string& url : split_list(value)) o.cluster_urls.push_back(std::move(url));
            return "";
        case flag_id::master: o.master_name = value; return "";
        case flag_id::token: o.token = value; return "";
        case flag_id::restart_guard:
        case flag_id::fencing: {
            if (value != "on" && value != "off")
                return "bad " + std::string(f.text) + " " + quote(value) + " (use on or off)";
            (f.id == flag_id::fencing ? o.fencing : o.restart_guard) = value == "on";
            return "";
        }
        case flag_id::permits: return apply_permits(o, value);
        case flag_id::wait_replicas:
            if (value.size() != 1 || value[0] < '0' || value[0] > '9') {
                return "bad --wait-replicas " + quote(value) + " (a count, 0 to 9)";
            }
            o.replicas_to_wait = static_cast<std::uint8_t>(value[0] - '0');
            return "";
        case flag_id::json: o.json = true; return "";
        case flag_id::prefix: o.prefix = value; return "";
        case flag_id::unfair: o.fair = false; return "";
        case flag_id::tls_ca:
        case flag_id::tls_ca_dir:
        case flag_id::tls_cert:
        case flag_id::tls_key:
        case flag_id::tls_server_name:
            if (value.empty()) return std::string(f.text) + " needs a value";
            tls_field(o.tls, f.id) = value;
            return "";
        case flag_id::fence_env:
            if (!valid_env_name(value))
                return "bad --fence-env " + quote(value) + ": not a variable name";
            o.fence_env = value;
            return "";
        case flag_id::on_lost:
            if (!parse_signal(value, o.lost_signal))
                return "bad --on-lost signal " + quote(value) + " (use TERM, INT, HUP, KILL, ...)";
            return "";
        case flag_id::ttl:
        case flag_id::wait:
        case flag_id::kill_after:
        case flag_id::wait_replicas_timeout:
        case flag_id::redis_timeout: return apply_duration_flag(o, f, value);
    }
    return "";
}

// EDGELOCK_WAIT_REPLICAS and EDGELOCK_WAIT_REPLICAS_TIMEOUT, read as their flags are, before
// the flags (which win); EDGELOCK_PASSWORD, unless --password-file is given.
std::string apply_environment(options& o, const environment& env) {
    const struct {
        const std::string& value;
        std::string_view variable;
        std::string_view flag;
    } variables[] = {
        {env.wait_replicas, "EDGELOCK_WAIT_REPLICAS", "--wait-replicas"},
        {env.wait_replicas_timeout, "EDGELOCK_WAIT_REPLICAS_TIMEOUT", "--wait-replicas-timeout"}};
    for (const auto& variable : variables) {
        if (variable.value.empty() || (find_flag(variable.flag)->commands & bit(o.command)) == 0)
            continue;
        if (std::string problem = apply(o, *find_flag(variable.flag), variable.value);
            !problem.empty()) {
            return std::string(variable.variable) + ": " + problem;
        }
    }
    o.password = env.password;
    return "";
}

// The flags up to CMD (run) or the end. Returns the index of CMD's first word, or sets `error`.
std::size_t parse_flags(options& o, const std::vector<std::string>& args, std::string& error,
                        bool& help) {
    const command c = o.command;
    std::size_t i = 1;
    for (; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (arg == "--") return i + 1;
        if (arg.empty() || arg[0] != '-' || arg == "-") {
            if (c == command::run) break;  // CMD starts here, as with flock(1)
            error = "unexpected argument " + quote(arg) + " (see edgelock " + command_name(c) +
                    " --help)";
            return i;
        }
        const std::size_t equals = arg.find('=');
        const std::string_view flag_text = std::string_view(arg).substr(0, equals);
        const flag_spec* f = find_flag(flag_text);
        if (f == nullptr || (f->commands & bit(c)) == 0) {
            error = "unknown flag " + shown(flag_text) + " (see edgelock " + command_name(c) +
                    " --help)";
            return i;
        }
        std::string value;
        if (!f->takes_value) {
            if (equals != std::string::npos) error = std::string(flag_text) + " takes no value";
            help = error.empty() && f->id == flag_id::help;
            if (!error.empty() || help) return i;
        } else if (equals != std::string::npos) {
            value = arg.substr(equals + 1);
        } else if (i + 1 < args.size()) {
            value = args[++i];
        } else {
            error = std::string(flag_text) + " needs a value";
            return i;
        }
        error = apply(o, *f, value);
        if (!error.empty()) return i;
    }
    return i;
}

parse_result parse_lock_command(command c, const std::vector<std::string>& args,
                                const environment& env) {
    parse_result r;
    options& o = r.parsed;
    o.command = c;
    if (std::string problem = apply_environment(o, env); !problem.empty())
        return usage_error(std::move(problem));
    std::string error;
    bool help = false;
    const std::size_t i = parse_flags(o, args, error, help);
    if (help) return help_for(c);
    if (!error.empty()) return usage_error(std::move(error));
    if (c == command::run && i < args.size()) {
        if (!o.program.empty())
            return usage_error("use either -c 'shell command' or CMD [ARGS...], not both");
        o.program.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
    } else if (i < args.size()) {
        return usage_error("unexpected argument " + quote(args[i]));
    }
    if (!o.password_file.empty()) o.password.clear();  // main() reads the file; the flag wins

    if (std::string problem = check_required(o); !problem.empty())
        return usage_error(std::move(problem));
    if (std::string problem = resolve_servers(o, env); !problem.empty())
        return usage_error(std::move(problem));
    if (std::string problem = resolve_tls(o, env); !problem.empty())
        return usage_error(std::move(problem));
    if (std::string problem = check_permits(o); !problem.empty())
        return usage_error(std::move(problem));
    if (std::string problem = check_replica_wait(o); !problem.empty())
        return usage_error(std::move(problem));
    if (c == command::run || c == command::hold) {
        if (std::string problem = check_lock(o); !problem.empty())
            return usage_error(std::move(problem));
    }
    apply_password(o);
    return r;
}

}  // namespace

parse_result parse_command_line(const std::vector<std::string>& args, const environment& env) {
    if (args.empty()) {
        return usage_error(
            "missing command (run, hold, status, list, release, check, sim); see edgelock --help");
    }
    const std::string& first = args[0];
    if (first == "--help" || first == "-h") return help_for(command::help);
    if (first == "--version") {
        parse_result r;
        r.parsed.command = command::version;
        return r;
    }
    if (first == "help") {
        if (args.size() == 1) return help_for(command::help);
        for (command c : {command::run, command::hold, command::status, command::list,
                          command::release, command::sim, command::check}) {
            if (args[1] == command_name(c)) return help_for(c);
        }
        return usage_error("no help for " + quote(args[1]) +
                           " (commands: run, hold, status, list, release, check, sim)");
    }
    if (first == "sim") {
        if (args.size() >= 2 && (args[1] == "--help" || args[1] == "-h"))
            return help_for(command::sim);
        parse_result r;
        r.parsed.command = command::sim;
        r.parsed.program.assign(args.begin() + 1, args.end());
        return r;
    }
    for (command c : {command::run, command::hold, command::status, command::list, command::release,
                      command::check}) {
        if (first == command_name(c)) return parse_lock_command(c, args, env);
    }
    if (!first.empty() && first[0] == '-') {
        return usage_error("unknown flag " + shown(first) +
                           " before the command (see edgelock --help)");
    }
    return usage_error("unknown command " + quote(first) +
                       " (commands: run, hold, status, list, release, check, sim)");
}

lock_config run_lock_config(const options& o) {
    lock_config config;
    config.name = o.name;
    config.ttl_ms = o.ttl_ms;
    // Sentinel's master, and a cluster's master of the name's slot, are one instance each.
    config.instances = static_cast<std::uint8_t>(o.redis_urls.empty() ? 1 : o.redis_urls.size());
    config.permits = o.permits;
    config.fencing = true;
    config.watchdog = true;
    config.restart_guard_ms = o.restart_guard ? -1 : 0;
    config.replicas_to_wait = o.replicas_to_wait;
    config.replica_wait_ms = o.replica_wait_ms;
    // Waiters line up (lock.hpp, "Fair waiting") unless --unfair; Redlock cannot keep a line.
    config.fair = o.fair && config.instances == 1;
    return config;
}

bool parse_duration(std::string_view text, std::int64_t& ms) {
    std::int64_t value = 0;
    if (!parse_duration_unbounded(text, value) || value > duration_ms_max) return false;
    ms = value;
    return true;
}

namespace {

// One "<integer><unit>" part of a duration at the front of `text`: its value in milliseconds
// and its unit's scale. False when `text` does not start with one, or it overflows.
bool parse_duration_part(std::string_view& text, std::int64_t& ms, std::int64_t& scale) {
    std::int64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc{} || end == text.data() || value < 0) return false;
    text.remove_prefix(static_cast<std::size_t>(end - text.data()));
    if (text.substr(0, 2) == "ms") scale = 1;
    else if (text.substr(0, 1) == "h") scale = 3'600'000;
    else if (text.substr(0, 1) == "m") scale = 60'000;
    else if (text.substr(0, 1) == "s") scale = 1'000;
    else return false;
    text.remove_prefix(scale == 1 ? 2 : 1);
    if (value > std::numeric_limits<std::int64_t>::max() / scale) return false;
    ms = value * scale;
    return true;
}

}  // namespace

bool parse_duration_unbounded(std::string_view text, std::int64_t& ms) {
    if (text == "0") {  // "0" needs no unit
        ms = 0;
        return true;
    }
    if (text.empty() || text[0] < '0' || text[0] > '9') return false;  // no sign, no space
    std::int64_t total = 0;
    std::int64_t previous_scale = std::numeric_limits<std::int64_t>::max();
    while (!text.empty()) {
        std::int64_t part = 0;
        std::int64_t scale = 0;
        if (!parse_duration_part(text, part, scale)) return false;
        // Each unit once, largest first: "1m30s", never "30s1m" or "1s1s".
        if (scale >= previous_scale) return false;
        previous_scale = scale;
        if (part > std::numeric_limits<std::int64_t>::max() - total) return false;
        total += part;
    }
    ms = total;
    return true;
}

std::string format_duration(std::int64_t ms) {
    if (ms != 0 && ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + "h";
    if (ms != 0 && ms % 60'000 == 0) return std::to_string(ms / 60'000) + "m";
    if (ms < 1'000) return std::to_string(ms) + "ms";
    std::string text = std::to_string(ms / 1'000);
    const std::int64_t rest = ms % 1'000;
    if (rest != 0) {
        std::string fraction = std::to_string(rest + 1'000).substr(1);  // 3 digits, leading zeros
        while (fraction.back() == '0') fraction.pop_back();
        text += "." + fraction;
    }
    return text + "s";
}

namespace {

struct named_signal {
    std::string_view name;
    int number;
};

const std::array<named_signal, 8>& signal_names() {
    static const std::array<named_signal, 8> names{{{"HUP", SIGHUP},
                                                    {"INT", SIGINT},
                                                    {"QUIT", SIGQUIT},
                                                    {"KILL", SIGKILL},
                                                    {"USR1", SIGUSR1},
                                                    {"USR2", SIGUSR2},
                                                    {"ALRM", SIGALRM},
                                                    {"TERM", SIGTERM}}};
    return names;
}

}  // namespace

std::string signal_name(int signal) {
    for (const named_signal& n : signal_names()) {
        if (n.number == signal) return "SIG" + std::string(n.name);
    }
    return "signal " + std::to_string(signal);
}

bool parse_signal(std::string_view text, int& signal) {
    const auto& names = signal_names();
    if (text.substr(0, 3) == "SIG") text.remove_prefix(3);
    for (const named_signal& n : names) {
        if (n.name == text) {
            signal = n.number;
            return true;
        }
    }
    if (text.empty() || text.size() > 2) return false;
    int number = 0;  // a '-' from_chars takes leaves the range below
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error != std::errc{} || end != text.data() + text.size()) return false;
    if (number < 1 || number > 64) return false;
    signal = number;
    return true;
}

std::string with_password(std::string_view url, std::string_view password) {
    if (password.empty() || url.find('@') != std::string_view::npos) return std::string(url);
    const std::size_t scheme_end = url.find("://");
    if (scheme_end == std::string_view::npos)
        return "redis://:" + std::string(password) + "@" + std::string(url);
    const std::size_t host = scheme_end + 3;
    return std::string(url.substr(0, host)) + ":" + std::string(password) + "@" +
           std::string(url.substr(host));
}

void apply_password(options& o) {
    for (std::vector<std::string>* urls : {&o.redis_urls, &o.sentinel_urls, &o.cluster_urls}) {
        for (std::string& url : *urls) url = with_password(url, o.password);
    }
}

std::vector<std::string> split_list(std::string_view text) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= text.size(); ++i) {
        const bool separator = i == text.size() || text[i] == ',' || text[i] == ' ' ||
                               text[i] == '\t' || text[i] == '\n';
        if (!separator) continue;
        if (i > start) parts.emplace_back(text.substr(start, i - start));
        start = i + 1;
    }
    return parts;
}

}  // namespace edgelock::cli
