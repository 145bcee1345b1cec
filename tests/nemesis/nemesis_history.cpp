// SPDX-License-Identifier: Apache-2.0
#include "nemesis_history.hpp"

#include <time.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace edgelock::nemesis {

std::int64_t monotonic_us() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return std::int64_t{ts.tv_sec} * 1'000'000 + ts.tv_nsec / 1000;
}

namespace {

void read_one_log(const std::string& path, std::vector<hold_record>& holds) {
    std::ifstream in(path);
    std::string line;
    // The hold the next writes belong to: the last "hold" line of this file.
    bool in_hold = false;
    while (std::getline(in, line)) {
        std::istringstream words(line);
        std::string kind;
        std::string holder;
        words >> kind >> holder;
        if (kind == "hold") {
            hold_record hold;
            hold.holder = holder;
            words >> hold.fence >> hold.start_us;
            holds.push_back(hold);
            in_hold = true;
        } else if ((kind == "write" || kind == "landed") && in_hold) {
            write_record write;
            std::int64_t fence = 0;
            int accepted = 0;
            words >> fence >> write.t_us >> accepted;
            if (!(words >> write.checked_us)) write.checked_us = write.t_us;
            write.accepted = accepted != 0;
            write.landed = kind == "landed";
            holds.back().writes.push_back(write);
        } else if (kind == "end" && in_hold) {
            words >> holds.back().end_us;
        } else if (kind == "lost" && in_hold) {
            words >> holds.back().lost_us;
        }
    }
}

std::int64_t belief_end_us(const hold_record& hold, belief_rule rule) {
    std::int64_t end = std::max(hold.start_us, hold.end_us);
    for (const write_record& write : hold.writes) {
        // A write that landed late was sent while held; the holder's belief ended before.
        if (write.landed) continue;
        end = std::max(end, rule == belief_rule::through_checks ? write.checked_us : write.t_us);
    }
    return end;
}

bool overlaps(const hold_record& a, const hold_record& b, belief_rule rule) {
    return std::max(a.start_us, b.start_us) <
           std::min(belief_end_us(a, rule), belief_end_us(b, rule));
}

// A hold of another holder, acquired later than `hold`, that the store had already served
// (accepted a write of) before `t_us`: as the simulator's check, a write of `hold` the store
// accepts after that is stale.
const hold_record* superseded_by(const std::vector<hold_record>& holds, const hold_record& hold,
                                 std::int64_t t_us) {
    for (const hold_record& other : holds) {
        if (other.holder == hold.holder || other.start_us <= hold.start_us) continue;
        for (const write_record& write : other.writes) {
            if (write.accepted && write.t_us < t_us) return &other;
        }
    }
    return nullptr;
}

}  // namespace

std::vector<hold_record> read_holds(const std::vector<std::string>& log_paths) {
    std::vector<hold_record> holds;
    for (const std::string& path : log_paths) read_one_log(path, holds);
    return holds;
}

verdict judge(const std::vector<hold_record>& holds, std::int64_t fault_start_us,
              std::int64_t heal_us, std::int64_t bound_us, belief_rule rule) {
    verdict out;
    for (std::size_t i = 0; i < holds.size(); ++i) {
        for (std::size_t j = i + 1; j < holds.size(); ++j) {
            if (holds[i].holder == holds[j].holder || !overlaps(holds[i], holds[j], rule)) continue;
            if (!out.overlap && out.detail.empty()) {
                out.detail = "overlap " + holds[i].holder + "(fence " +
                             std::to_string(holds[i].fence) + ") and " + holds[j].holder +
                             "(fence " + std::to_string(holds[j].fence) + ")";
            }
            out.overlap = true;
        }
        for (const write_record& write : holds[i].writes) {
            if (!write.accepted) continue;
            const std::int64_t acted_us =
                rule == belief_rule::through_checks ? write.checked_us : write.t_us;
            const hold_record* later = superseded_by(holds, holds[i], acted_us);
            if (later == nullptr) continue;
            if (!out.stale) {
                out.detail += (out.detail.empty() ? "" : "; ") + std::string("stale write of ") +
                              holds[i].holder + " (fence " + std::to_string(holds[i].fence) +
                              ") after the store served " + later->holder + " (fence " +
                              std::to_string(later->fence) + ")";
            }
            out.stale = true;
        }
    }
    const bool live = std::any_of(holds.begin(), holds.end(), [&](const hold_record& hold) {
        return hold.start_us >= fault_start_us && hold.start_us <= heal_us + bound_us;
    });
    out.liveness_violated = !live;
    if (!live) out.detail += (out.detail.empty() ? "" : "; ") + std::string("nobody acquired");
    return out;
}

void lost_holds(const std::vector<hold_record>& holds, std::int64_t from_us, verdict& out) {
    for (const hold_record& hold : holds) {
        if (hold.lost_us == 0 || hold.lost_us < from_us) continue;
        if (!out.lost) {
            out.detail += (out.detail.empty() ? "" : "; ") + hold.holder + "(fence " +
                          std::to_string(hold.fence) + ") lost its hold " +
                          std::to_string((hold.lost_us - hold.start_us) / 1000) +
                          " ms after taking it";
        }
        out.lost = true;
    }
}

}  // namespace edgelock::nemesis
