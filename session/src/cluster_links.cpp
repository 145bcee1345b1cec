// SPDX-License-Identifier: Apache-2.0
#include "edgelock/session/cluster_links.hpp"

namespace edgelock::session {

bool cluster_links::set_seeds(const node_address* seeds, std::size_t count) noexcept {
    seed_count_ = 0;
    seed_next_ = 0;
    for (std::size_t s = 0; s < count; ++s) {
        const std::uint8_t k = map_.add_node(seeds[s]);
        if (k == none) return false;
        bool known = false;
        for (std::size_t t = 0; t < seed_count_; ++t) known = known || seed_indices_[t] == k;
        if (known) continue;  // the same node twice
        if (seed_count_ == seeds_.size()) return false;
        seeds_[seed_count_] = seeds[s];
        seed_indices_[seed_count_++] = k;
    }
    return true;
}

std::uint8_t cluster_links::seed() const noexcept {
    if (seed_count_ == 0) return none;
    const std::uint8_t k = map_.index_of(seeds_[seed_next_]);
    return k != none ? k : seed_indices_[seed_next_];
}

void cluster_links::next_seed() noexcept {
    if (seed_count_ > 0) seed_next_ = (seed_next_ + 1) % seed_count_;
}

bool cluster_links::needs_setup(std::uint8_t k) const noexcept {
    return !linked(k) || !addresses_[k].same_node(map_.node(k));
}

const node_address& cluster_links::set_up(std::uint8_t k) noexcept {
    addresses_[k] = map_.node(k);
    linked_ |= node_set{1} << k;
    return addresses_[k];
}

std::uint8_t cluster_links::reader(node_set ready) const noexcept {
    const std::size_t count = cluster_masters_max;
    const std::size_t after = last_reader_ == none ? count - 1 : last_reader_;
    for (std::size_t n = 1; n <= count; ++n) {
        const std::size_t k = (after + n) % count;
        if (((ready >> k) & 1u) != 0) return static_cast<std::uint8_t>(k);
    }
    return none;
}

void cluster_links::read_sent(std::uint8_t k) noexcept {
    refresh_.sent();
    last_reader_ = k;
}

bool cluster_links::read_wanted(bool lock_has_requests) const noexcept {
    return lock_has_requests && map_.stale();
}

bool cluster_links::wanted(std::uint8_t k, std::uint8_t target, bool read_due,
                           bool ready) const noexcept {
    return k == target || (read_due && linked(k) && (ready || k == seed()));
}

std::uint8_t cluster_links::subscriber_move(std::uint16_t slot,
                                            const node_address* at) const noexcept {
    const std::uint8_t m = map_.master_of(slot);
    if (m == none || (at != nullptr && at->same_node(map_.node(m)))) return none;
    return m;
}

void cluster_links::link_ended(bool suspect) noexcept {
    if (suspect) map_.mark_stale();
}

failure cluster_links::read_answered(std::uint8_t k, const reply_node* nodes, std::size_t count,
                                     node_set in_use, std::int64_t now) noexcept {
    const bool fails = faults_ != nullptr && faults_->fire(fault_point::fail_map_read);
    const errc read =
        fails ? errc::unexpected_reply : map_.read_slots(nodes, count, addresses_[k], in_use);
    refresh_.ended(now);  // read or not: the next read may go after the gap
    if (read == errc::ok) return {};
    // A cluster of more masters than one client reaches: no later read helps.
    if (read == errc::invalid_instances) return failure::of(transport_errc::too_many_masters);
    return failure::of(transport_errc::no_slot_map);
}

}  // namespace edgelock::session
