#include "edgelock/sim/configuration.hpp"

#include <cstdio>

namespace edgelock::sim {

const std::array<configuration, 7>& configurations() noexcept {
    static const std::array<configuration, 7> all = {{
        {"single", topology::single, 1, 1, false, 0, false},
        {"single+fencing", topology::single, 1, 1, true, 0, false},
        {"sentinel", topology::sentinel, 1, 3, false, 0, false},
        {"sentinel+WAIT", topology::sentinel, 1, 3, false, 1, false},
        {"redlock-5", topology::redlock, 5, 5, false, 0, false},
        {"redlock-5+fencing", topology::redlock, 5, 5, true, 0, false},
        {"redlock-5+delayed-restart", topology::redlock, 5, 5, false, 0, true},
    }};
    return all;
}

const configuration* find_configuration(std::string_view name) noexcept {
    for (const configuration& c : configurations()) {
        if (c.name == name) return &c;
    }
    return nullptr;
}

world_params scripted_params() noexcept { return world_params{}; }

world_params random_params(prng& rng) noexcept {
    world_params p;
    p.clients = static_cast<std::uint8_t>(rng.between(2, 4));
    p.think_ms_min = rng.between(5, 40);
    p.think_ms_max = p.think_ms_min + rng.between(10, 200);
    p.work_ms_min = rng.between(5, 100);
    p.work_ms_max = p.work_ms_min + rng.between(0, 350);
    p.link_us_min = rng.between(100, 500);
    p.link_us_max = p.link_us_min + rng.between(0, 2000);
    p.tail_per_million = static_cast<std::uint32_t>(rng.between(0, 50'000));
    p.repl_us_min = rng.between(200, 2000);
    p.repl_us_max = p.repl_us_min + rng.between(0, 5000);
    p.duration_ms = rng.between(1500, 3000);
    return p;
}

std::string to_text(const world_params& p) {
    char line[512];
    std::snprintf(line, sizeof line,
                  "ttl=%lldms clients=%u wait=%lldms retry=%lld..%lldms think=%lld..%lldms "
                  "work=%lld..%lldms job_timeout=%lldms io_timeout=%lldms link=%lld..%lldus "
                  "tail=%u/1e6..%lldms repl=%lld..%lldus down_after=%lldms "
                  "delayed_restart=%lldms duration=%lldms liveness_window=%lldms clock_ppm=+-%d",
                  static_cast<long long>(p.ttl_ms), unsigned{p.clients},
                  static_cast<long long>(p.acquire_wait_ms),
                  static_cast<long long>(p.retry_delay_ms_min),
                  static_cast<long long>(p.retry_delay_ms_max),
                  static_cast<long long>(p.think_ms_min), static_cast<long long>(p.think_ms_max),
                  static_cast<long long>(p.work_ms_min), static_cast<long long>(p.work_ms_max),
                  static_cast<long long>(p.job_timeout_ms), static_cast<long long>(p.io_timeout_ms),
                  static_cast<long long>(p.link_us_min), static_cast<long long>(p.link_us_max),
                  p.tail_per_million, static_cast<long long>(p.tail_ms_max),
                  static_cast<long long>(p.repl_us_min), static_cast<long long>(p.repl_us_max),
                  static_cast<long long>(p.down_after_ms),
                  static_cast<long long>(p.delayed_restart_ms),
                  static_cast<long long>(p.duration_ms),
                  static_cast<long long>(p.liveness_window_ms), p.clock_ppm_max);
    return line;
}

}  // namespace edgelock::sim
