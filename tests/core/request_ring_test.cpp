// SPDX-License-Identifier: Apache-2.0
// The request ring (one instance's queued and in-flight requests) and the token slots, on
// their own: order, capacity, what is in flight, and which requests a reused slot affects.
#include "edgelock/request_ring.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using edgelock::lock_request;
using edgelock::request_kind;
using edgelock::request_ring;
using edgelock::requests_per_instance_max;
using edgelock::token_slots;

lock_request make(request_kind kind, bool current = false, std::uint8_t token_slot = 0) {
    lock_request r{};
    r.kind_bits = static_cast<std::uint8_t>(kind);
    r.current = current ? 1 : 0;
    r.token_slot = token_slot;
    return r;
}

std::vector<request_kind> kinds(const request_ring& ring) {
    std::vector<request_kind> out;
    for (std::uint8_t n = 0; n < ring.size(); ++n) out.push_back(ring.at(n).kind());
    return out;
}

TEST(request_ring, a_zeroed_ring_is_empty) {
    const request_ring ring{};
    EXPECT_EQ(ring.size(), 0);
    EXPECT_EQ(ring.in_flight(), 0);
    EXPECT_FALSE(ring.has_unsent());
    EXPECT_EQ(ring.free_slots(), requests_per_instance_max);
}

TEST(request_ring, requests_are_written_and_answered_in_the_order_they_were_queued) {
    request_ring ring{};
    ASSERT_TRUE(ring.push(make(request_kind::acquire), 1));
    ASSERT_TRUE(ring.push(make(request_kind::renew), 1));
    EXPECT_EQ(ring.next_unsent().kind(), request_kind::acquire);
    ring.mark_sent();
    EXPECT_EQ(ring.in_flight(), 1);
    EXPECT_TRUE(ring.has_unsent());
    EXPECT_EQ(ring.next_unsent().kind(), request_kind::renew);
    ring.mark_sent();
    EXPECT_FALSE(ring.has_unsent());
    bool replaced = true;
    EXPECT_EQ(ring.pop_in_flight(replaced).kind(), request_kind::acquire);
    EXPECT_FALSE(replaced);
    EXPECT_EQ(ring.pop_in_flight(replaced).kind(), request_kind::renew);
    EXPECT_EQ(ring.size(), 0);
    EXPECT_EQ(ring.in_flight(), 0);
}

TEST(request_ring, wraps_around_its_slots_without_losing_order) {
    request_ring ring{};
    bool replaced = false;
    for (int round = 0; round < 3 * static_cast<int>(requests_per_instance_max); ++round) {
        ASSERT_TRUE(ring.push(make(request_kind::acquire), 1));
        ASSERT_TRUE(ring.push(make(request_kind::release), 1));
        ring.mark_sent();
        EXPECT_EQ(ring.pop_in_flight(replaced).kind(), request_kind::acquire);
        ASSERT_EQ(kinds(ring), std::vector<request_kind>{request_kind::release});
        ring.mark_sent();
        EXPECT_EQ(ring.pop_in_flight(replaced).kind(), request_kind::release);
    }
}

// A claim is queued only while two slots are free, so the release that may follow it fits.
TEST(request_ring, a_push_needing_more_free_slots_than_there_are_changes_nothing) {
    request_ring ring{};
    for (std::size_t n = 0; n + 1 < requests_per_instance_max; ++n) {
        ASSERT_TRUE(ring.push(make(request_kind::renew), 1));
    }
    EXPECT_EQ(ring.free_slots(), 1u);
    EXPECT_FALSE(ring.push(make(request_kind::acquire), 2));
    EXPECT_EQ(ring.size(), requests_per_instance_max - 1);
    EXPECT_TRUE(ring.push(make(request_kind::release), 1));
    EXPECT_FALSE(ring.push(make(request_kind::release), 1)) << "full";
    EXPECT_EQ(ring.size(), requests_per_instance_max);
}

TEST(request_ring, mark_all_sent_puts_every_queued_request_in_flight) {
    request_ring ring{};
    ASSERT_TRUE(ring.push(make(request_kind::acquire), 1));
    ring.mark_sent();
    ASSERT_TRUE(ring.push(make(request_kind::release), 1));
    ASSERT_TRUE(ring.push(make(request_kind::renew), 1));
    ring.mark_all_sent();
    EXPECT_EQ(ring.in_flight(), 3);
    EXPECT_FALSE(ring.has_unsent());
    ring.mark_all_sent();
    EXPECT_EQ(ring.in_flight(), 3) << "no more than there are";
}

TEST(request_ring, dropping_the_running_rounds_unsent_requests_keeps_the_rest_in_order) {
    request_ring ring{};
    ASSERT_TRUE(ring.push(make(request_kind::acquire, true), 1));  // in flight: stays
    ring.mark_sent();
    ASSERT_TRUE(ring.push(make(request_kind::release, false), 1));
    ASSERT_TRUE(ring.push(make(request_kind::replicate, true), 1));
    ASSERT_TRUE(ring.push(make(request_kind::renew, false), 1));
    EXPECT_TRUE(ring.drop_unsent_current());
    EXPECT_EQ(kinds(ring), (std::vector<request_kind>{request_kind::acquire, request_kind::release,
                                                      request_kind::renew}));
    EXPECT_EQ(ring.in_flight(), 1);
    EXPECT_FALSE(ring.drop_unsent_current()) << "nothing of the round left unsent";
}

TEST(request_ring, clear_current_leaves_no_request_of_a_running_round) {
    request_ring ring{};
    ASSERT_TRUE(ring.push(make(request_kind::acquire, true), 1));
    ring.mark_sent();
    ASSERT_TRUE(ring.push(make(request_kind::renew, true), 1));
    ring.clear_current();
    EXPECT_EQ(ring.at(0).current, 0);
    EXPECT_EQ(ring.at(1).current, 0);
    EXPECT_FALSE(ring.drop_unsent_current());
}

TEST(request_ring, a_reused_token_slot_marks_its_requests_in_flight_and_drops_its_unsent_ones) {
    request_ring ring{};
    ASSERT_TRUE(ring.push(make(request_kind::release, false, 1), 1));  // in flight, slot 1
    ASSERT_TRUE(ring.push(make(request_kind::acquire, true, 0), 1));   // in flight, slot 0
    ring.mark_sent();
    ring.mark_sent();
    ASSERT_TRUE(ring.push(make(request_kind::release, false, 1), 1));  // unsent, slot 1
    ASSERT_TRUE(ring.push(make(request_kind::release, false, 0), 1));  // unsent, slot 0
    ring.reuse_token_slot(1);
    ASSERT_EQ(ring.size(), 3);
    EXPECT_EQ(ring.at(2).token_slot, 0) << "the unsent request of slot 1 is gone";
    bool replaced = false;
    EXPECT_EQ(ring.pop_in_flight(replaced).token_slot, 1);
    EXPECT_TRUE(replaced);
    EXPECT_EQ(ring.pop_in_flight(replaced).token_slot, 0);
    EXPECT_FALSE(replaced);
    // The mark went with the request: the slot it sat in is reused without it.
    ring.mark_sent();
    ASSERT_TRUE(ring.push(make(request_kind::renew, false, 0), 1));
    ASSERT_TRUE(ring.push(make(request_kind::renew, false, 0), 1));
    ring.mark_all_sent();
    for (int n = 0; n < 3; ++n) {
        ring.pop_in_flight(replaced);
        EXPECT_FALSE(replaced) << n;
    }
}

const edgelock::owner_token first_token{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
                                        0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77};
const edgelock::owner_token second_token{0xff, 0xee, 0xdd, 0xcc, 0xbb, 0xaa, 0x99, 0x88,
                                         0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0x00};

std::string hex(const token_slots& tokens, std::uint8_t slot) {
    const auto text = tokens.hex(slot);
    return std::string(text.data(), text.size());
}

TEST(token_slots, a_new_token_takes_the_other_slot_and_keeps_the_previous_one) {
    token_slots tokens;
    EXPECT_EQ(tokens.current(), 0);
    EXPECT_EQ(tokens.next(), 1);
    tokens.take(first_token);
    EXPECT_EQ(tokens.current(), 1);
    EXPECT_EQ(tokens.token(1), first_token);
    tokens.take(second_token);
    EXPECT_EQ(tokens.current(), 0);
    EXPECT_EQ(tokens.token(0), second_token);
    EXPECT_EQ(tokens.token(1), first_token) << "the previous acquire()'s, for its cleanups";
    tokens.take(first_token);
    EXPECT_EQ(tokens.current(), 1);
}

TEST(token_slots, hex_is_lower_case_two_digits_a_byte) {
    token_slots tokens;
    tokens.take(first_token);
    tokens.take(second_token);
    EXPECT_EQ(hex(tokens, 1), "0123456789abcdef0011223344556677");
    EXPECT_EQ(hex(tokens, 0), "ffeeddccbbaa99887766554433221100");
}

}  // namespace
