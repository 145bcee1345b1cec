// SPDX-License-Identifier: Apache-2.0
#include "edgelock/sim/checker.hpp"

#include <algorithm>
#include <array>
#include <cstdio>

#include "edgelock/sim/configuration.hpp"
#include "edgelock/sim/resource.hpp"

namespace edgelock::sim {
namespace {

struct belief {
    std::int64_t start_us;
    std::int64_t end_us;
    std::uint8_t client;
    std::uint32_t hold;
};

std::string seconds(std::int64_t us) {
    char text[32];
    std::snprintf(text, sizeof text, "%lld.%06llds", static_cast<long long>(us / 1'000'000),
                  static_cast<long long>(us % 1'000'000));
    return text;
}

// A semaphore's overlap: more clients than permits believed at one instant. Each client's
// beliefs are counted once, whichever of them (a hold, an action window) is in force.
check_outcome check_permits_overlap(const std::vector<belief>& beliefs, std::uint16_t permits) {
    struct edge {
        std::int64_t at_us;
        bool starts;
        const belief* b;
    };
    std::vector<edge> edges;
    edges.reserve(2 * beliefs.size());
    for (const belief& b : beliefs) {
        edges.push_back({b.start_us, true, &b});
        edges.push_back({b.end_us, false, &b});
    }
    std::sort(edges.begin(), edges.end(), [](const edge& a, const edge& b) {
        return a.at_us != b.at_us ? a.at_us < b.at_us : a.starts < b.starts;  // ends first
    });
    std::array<std::uint32_t, clients_max> in_force{};
    std::array<const belief*, clients_max> latest{};
    std::size_t believing = 0;
    for (const edge& e : edges) {
        const std::uint8_t c = e.b->client;
        if (!e.starts) {
            if (--in_force[c] == 0) --believing;
            continue;
        }
        if (in_force[c]++ == 0) ++believing;
        latest[c] = e.b;
        if (believing <= permits) continue;
        check_outcome out;
        out.ok = false;
        out.detail = std::to_string(believing) + " clients believed they held one of the " +
                     std::to_string(permits) + " permits at " + seconds(e.at_us) + ":";
        for (std::size_t k = 0; k < clients_max; ++k) {
            if (in_force[k] == 0) continue;
            out.detail += " c" + std::to_string(k) + " (hold #" + std::to_string(latest[k]->hold) +
                          ", from " + seconds(latest[k]->start_us) + ")";
        }
        return out;
    }
    return {};
}

check_outcome check_overlap(const history& h) {
    std::vector<belief> beliefs;
    beliefs.reserve(h.holds.size() + h.actions.size());
    for (const hold_record& r : h.holds) {
        if (r.end_us > r.start_us) beliefs.push_back({r.start_us, r.end_us, r.client, r.index});
    }
    for (const action_record& a : h.actions) {
        if (a.send_us > a.check_us) beliefs.push_back({a.check_us, a.send_us, a.client, a.hold});
    }
    if (h.permits > 1) return check_permits_overlap(beliefs, h.permits);
    std::sort(beliefs.begin(), beliefs.end(), [](const belief& a, const belief& b) {
        if (a.start_us != b.start_us) return a.start_us < b.start_us;
        return a.client < b.client;
    });
    // Per client, the belief reaching furthest among those started so far.
    std::array<const belief*, clients_max> furthest{};
    for (const belief& b : beliefs) {
        for (std::size_t c = 0; c < clients_max; ++c) {
            const belief* other = furthest[c];
            if (c == b.client || other == nullptr || other->end_us <= b.start_us) continue;
            check_outcome out;
            out.ok = false;
            out.detail = "c" + std::to_string(other->client) + " (hold #" +
                         std::to_string(other->hold) + ") believed it held the lock from " +
                         seconds(other->start_us) + " to " + seconds(other->end_us) + "; c" +
                         std::to_string(b.client) + " (hold #" + std::to_string(b.hold) +
                         ") from " + seconds(b.start_us);
            return out;
        }
        const belief*& mine = furthest[b.client];
        if (mine == nullptr || mine->end_us < b.end_us) mine = &b;
    }
    return {};
}

// When each hold was over: its belief ended and no write of it was still to go out, and no
// sooner than just after it began (one the run's end cut off at its first instant is not over
// before itself).
std::vector<std::int64_t> holds_done_us(const history& h) {
    std::vector<std::int64_t> done_us(h.holds.size());
    for (std::size_t i = 0; i < h.holds.size(); ++i) {
        done_us[i] = std::max(h.holds[i].end_us, h.holds[i].start_us + 1);
    }
    for (const action_record& a : h.actions) {
        if (a.hold < done_us.size()) done_us[a.hold] = std::max(done_us[a.hold], a.send_us);
    }
    return done_us;
}

// A semaphore's stale write: the resource accepted a write that arrived after its holder's
// belief had ended, while N other clients it had served still held: N + 1 owners at the
// resource at once. (Later grants alone prove nothing: the other permits may change hands
// many times around one long hold.)
check_outcome check_permits_stale(const history& h) {
    const std::vector<std::int64_t> done_us = holds_done_us(h);
    std::vector<std::uint32_t> served;
    for (const resource_record& op : h.resource_ops) {
        if (!op.accepted || op.hold >= h.holds.size()) continue;
        std::array<bool, clients_max> holding{};  // clients other than the writer's
        for (const std::uint32_t g : served) {
            const hold_record& other = h.holds[g];
            const bool holds = other.start_us <= op.at_us && done_us[g] > op.at_us;
            if (holds && other.client != op.client) holding[other.client] = true;
        }
        const auto current =
            static_cast<std::size_t>(std::count(holding.begin(), holding.end(), true));
        const bool late = h.holds[op.hold].end_us < op.at_us;
        if (op.write && late && current >= h.permits) {
            check_outcome out;
            out.ok = false;
            out.detail = "the resource accepted a write (value " + std::to_string(op.value) +
                         ") from c" + std::to_string(op.client) + " hold #" +
                         std::to_string(op.hold) + " at " + seconds(op.at_us) +
                         ", after its hold ended, while " + std::to_string(current) +
                         " other clients it had served still held";
            return out;
        }
        if (std::find(served.begin(), served.end(), op.hold) == served.end())
            served.push_back(op.hold);
    }
    return {};
}

// The lock's stale write, and a fenced semaphore's per permit (as the server numbered its
// leases): the resource accepted a write from a hold after serving a later-acquired hold of
// the same permit (the lock has one). Holds of other permits may come and go around a long one.
check_outcome check_stale_per_permit(const history& h) {
    std::array<std::int64_t, resource_permits_max> latest{};  // a hold index + 1; 0: none
    for (const resource_record& op : h.resource_ops) {
        if (!op.accepted) continue;
        const bool numbered = h.permits > 1;
        if (numbered && op.hold >= h.holds.size()) continue;
        const std::uint16_t permit = numbered ? h.holds[op.hold].permit : 0;
        if (permit >= latest.size()) continue;
        std::int64_t& served = latest[permit];
        if (op.write && served > 0 && op.hold + 1 < served) {
            check_outcome out;
            out.ok = false;
            out.detail = "the resource accepted a write (value " + std::to_string(op.value) +
                         ", token " + std::to_string(op.token) + ") from c" +
                         std::to_string(op.client) + " hold #" + std::to_string(op.hold) + " at " +
                         seconds(op.at_us) + ", after serving hold #" + std::to_string(served - 1) +
                         (numbered ? " of its permit " + std::to_string(permit) : std::string());
            return out;
        }
        served = std::max<std::int64_t>(served, op.hold + 1);
    }
    return {};
}

check_outcome check_stale(const history& h) {
    if (h.permits > 1 && !h.fencing) return check_permits_stale(h);
    return check_stale_per_permit(h);
}

// A fenced semaphore's token names its lease's permit, as the server numbered it (lock.hpp):
// a store keeping the highest token per permit judges each holder against its own permit.
check_outcome check_tokens_name_permits(const history& h) {
    for (const hold_record& r : h.holds) {
        if (permit_of(r.fence, h.permits) == r.permit) continue;
        check_outcome out;
        out.ok = false;
        out.detail = "hold #" + std::to_string(r.index) + " (c" + std::to_string(r.client) +
                     ") got token " + std::to_string(r.fence) + ", which names permit " +
                     std::to_string(permit_of(r.fence, h.permits)) + ", not its permit " +
                     std::to_string(r.permit);
        return out;
    }
    return {};
}

// Holders that do not overlap: whoever began after another had stopped (its lease over and
// no write of it still to go out) must carry the larger token. Overlapping holders are the
// overlap check's business; between them no order is promised.
check_outcome check_order(const history& h) {
    if (!h.fencing) return {};
    if (h.permits > 1) {
        if (check_outcome named = check_tokens_name_permits(h); !named.ok) return named;
    }
    const std::vector<std::int64_t> done_us = holds_done_us(h);
    std::vector<std::size_t> by_done(h.holds.size());
    for (std::size_t i = 0; i < by_done.size(); ++i) by_done[i] = i;
    std::sort(by_done.begin(), by_done.end(), [&](std::size_t a, std::size_t b) {
        return done_us[a] != done_us[b] ? done_us[a] < done_us[b] : a < b;
    });
    std::vector<std::size_t> by_start = by_done;
    std::sort(by_start.begin(), by_start.end(), [&](std::size_t a, std::size_t b) {
        return h.holds[a].start_us != h.holds[b].start_us
                   ? h.holds[a].start_us < h.holds[b].start_us
                   : a < b;
    });
    std::size_t next_done = 0;
    // The largest token among holds already over, per permit: a semaphore's other permits
    // change hands around a grant its holder hears of late (S3), and only holds of one
    // permit follow each other (the lock has one).
    std::array<const hold_record*, resource_permits_max> highest_of{};
    for (const std::size_t i : by_start) {
        const hold_record& later = h.holds[i];
        while (next_done < by_done.size() && done_us[by_done[next_done]] <= later.start_us) {
            const hold_record& over = h.holds[by_done[next_done]];
            const hold_record*& highest = highest_of[over.permit % highest_of.size()];
            if (highest == nullptr || over.fence > highest->fence) highest = &over;
            ++next_done;
        }
        const hold_record* highest = highest_of[later.permit % highest_of.size()];
        if (highest == nullptr || later.fence > highest->fence) continue;
        check_outcome out;
        out.ok = false;
        out.detail = "hold #" + std::to_string(later.index) + " (c" + std::to_string(later.client) +
                     ", from " + seconds(later.start_us) + ") got token " +
                     std::to_string(later.fence) + ", not above token " +
                     std::to_string(highest->fence) + " of hold #" +
                     std::to_string(highest->index) + " (c" + std::to_string(highest->client) +
                     "), over by then";
        return out;
    }
    return {};
}

check_outcome check_liveness(const history& h) {
    for (const hold_record& r : h.holds) {
        if (r.start_us >= h.heal_us) return {};
    }
    check_outcome out;
    out.ok = false;
    out.detail = "no client acquired the lock between the last fault healing at " +
                 seconds(h.heal_us) + " and the end at " + seconds(h.end_us);
    return out;
}

check_outcome check_judged(const judged_record& judged, const char* what) {
    if (judged.violations == 0) return {};
    check_outcome out;
    out.ok = false;
    out.detail = judged.first + " (" + std::to_string(judged.violations) + " " + what + ")";
    return out;
}

check_outcome check_fair(std::uint32_t violations, const std::string& first) {
    if (violations == 0) return {};
    check_outcome out;
    out.ok = false;
    out.detail = first + " (" + std::to_string(violations) + " time(s))";
    return out;
}

}  // namespace

const char* to_string(hold_end e) noexcept {
    switch (e) {
        case hold_end::open: return "open";
        case hold_end::released: return "released";
        case hold_end::lost: return "lost";
        case hold_end::expired: return "expired";
        default: return "run_end";
    }
}

const char* to_string(check_kind k) noexcept {
    switch (k) {
        case check_kind::overlap: return "overlap";
        case check_kind::stale: return "stale";
        case check_kind::order: return "order";
        case check_kind::liveness: return "liveness";
        case check_kind::wakeup: return "wakeup";
        case check_kind::fifo: return "fifo";
        case check_kind::kept: return "kept";
        case check_kind::available: return "available";
        case check_kind::claim: return "claim";
        default: return "oracle";
    }
}

bool parse_check(std::string_view name, check_kind& out) noexcept {
    for (std::size_t k = 0; k < check_count; ++k) {
        if (name == to_string(static_cast<check_kind>(k))) {
            out = static_cast<check_kind>(k);
            return true;
        }
    }
    return false;
}

bool verdict::all_ok() const noexcept {
    for (const check_outcome& c : checks) {
        if (!c.ok) return false;
    }
    return true;
}

verdict check_history(const history& h) {
    verdict v;
    v.checks[static_cast<std::size_t>(check_kind::overlap)] = check_overlap(h);
    v.checks[static_cast<std::size_t>(check_kind::stale)] = check_stale(h);
    v.checks[static_cast<std::size_t>(check_kind::order)] = check_order(h);
    v.checks[static_cast<std::size_t>(check_kind::liveness)] = check_liveness(h);
    v.checks[static_cast<std::size_t>(check_kind::oracle)] =
        check_judged(h.oracle, "sampled instant(s) failed");
    v.checks[static_cast<std::size_t>(check_kind::kept)] =
        check_judged(h.kept, "hold(s) lost without a reason");
    v.checks[static_cast<std::size_t>(check_kind::available)] = check_judged(
        h.available,
        "hold(s) lost, or free lock(s) not taken, through what the configuration rides out");
    v.checks[static_cast<std::size_t>(check_kind::claim)] =
        check_judged(h.claim, "claim(s) counted without the server's evidence");
    v.checks[static_cast<std::size_t>(check_kind::wakeup)] =
        check_fair(h.fair.wakeup_violations, h.fair.first_wakeup);
    v.checks[static_cast<std::size_t>(check_kind::fifo)] =
        check_fair(h.fair.fifo_violations, h.fair.first_fifo);
    return v;
}

}  // namespace edgelock::sim
