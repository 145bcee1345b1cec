// SPDX-License-Identifier: Apache-2.0
// The lock on the wire: each queued request encoded as the command or script it stands for
// (lock.hpp, "The acquire on the wire"; scripts.hpp), and each reply read back as the
// instance's answer in the running round.
#include <algorithm>
#include <charconv>
#include <string_view>

#include "edgelock/assert.hpp"
#include "edgelock/keys.hpp"
#include "edgelock/lock.hpp"
#include "edgelock/resp_writer.hpp"
#include "edgelock/scripts.hpp"

namespace edgelock {

// The longest requests: EVAL with a fair acquire script (the lock's with four keys, the
// semaphore's longer one with five) of the longest name, the token and up to three numbers,
// with room for RESP's framing.
static_assert(request_bytes_max >= fair_acquire_script.text.size() + 4 * key_bytes_max + 256,
              "request_bytes_max must hold EVAL with the fair acquire script");
static_assert(request_bytes_max >= fair_permit_acquire_script.text.size() + 5 * key_bytes_max + 256,
              "request_bytes_max must hold EVAL with the fair semaphore's acquire script");

namespace {

bool is_error_with_code(const reply_node& reply, std::string_view code) {
    // Not substr(): its out-of-range check would link a throwing path into the core.
    return reply.type == reply_type::error && reply.text.size() >= code.size() &&
           std::string_view(reply.text.data(), code.size()) == code;
}

bool is_noscript(const reply_node& reply) { return is_error_with_code(reply, "NOSCRIPT"); }

// Redis before 7.0 refuses SET with both NX and GET this way, before running anything.
bool is_syntax_error(const reply_node& reply) {
    return is_error_with_code(reply, "ERR syntax error");
}

// Redis's WRONGTYPE: as SET ... GET answers it, as a script's redis.call raises it on 7.0
// and later, or wrapped by a server before 7.0 ("ERR Error running script (call to f_...):
// @user_script:3: WRONGTYPE Operation against ...").
bool is_wrong_type(const reply_node& reply) {
    if (is_error_with_code(reply, "WRONGTYPE")) return true;
    return is_error_with_code(reply, "ERR Error running script") &&
           reply.text.find(": WRONGTYPE ") != std::string_view::npos;
}

// An acquire's error that no retry can mend (lock.hpp, "Semaphores"): the fence counter at
// 2^63-1 (scripts.hpp), the name held as the other kind (WRONGTYPE, from SET ... GET or from
// a script's first touch of the key), or a semaphore held with another N. ok for any other
// reply.
errc incurable_refusal(const reply_node& reply) {
    if (is_error_with_code(reply, "FENCE_EXHAUSTED")) return errc::fence_exhausted;
    if (is_wrong_type(reply)) return errc::wrong_kind;
    if (is_error_with_code(reply, "PERMITS_MISMATCH")) return errc::permits_mismatch;
    return errc::ok;
}

// A fence value as the acquire script returns it: GET's decimal string of a counter in
// [1, 2^63-1]. Anything else (a sign, a leading zero, more than 2^63-1) is not a fence: the
// first byte in 1..9 refuses a sign, a space and a leading zero; from_chars refuses the rest.
bool parse_fence(const reply_node& reply, std::int64_t& fence) {
    const std::string_view text = reply.text;
    if (reply.type != reply_type::bulk_string || text.empty()) return false;
    if (text[0] < '1' || text[0] > '9') return false;
    std::int64_t value = 0;
    const char* const last = text.data() + text.size();
    const auto [end, error] = std::from_chars(text.data(), last, value);
    if (error != std::errc{} || end != last) return false;
    fence = value;
    return true;
}

// The keys a script gets after the name: a fair lock's queue keys (for its acquire and
// release), the fence key (for the raise, and with fencing an acquire or a fair lock's
// release, which numbers the hold it hands over), and a fenced
// semaphore's slots key (its acquire and renew: it numbers its leases).
struct key_list {
    std::array<companion, 4> companions{};
    std::size_t count = 0;
};

key_list companions_for(request_kind kind, bool fair, bool fencing,
                        std::uint16_t permits) noexcept {
    key_list keys;
    if (fair && (kind == request_kind::acquire || kind == request_kind::release)) {
        keys.companions[keys.count++] = companion::queue;
        keys.companions[keys.count++] = companion::queue_ttl;
    }
    // A fenced fair lock's release numbers the hold it hands to the head of the line.
    const bool grants = fair && permits == 1 && kind == request_kind::release;
    if (kind == request_kind::raise || ((kind == request_kind::acquire || grants) && fencing))
        keys.companions[keys.count++] = companion::fence;
    if (fencing && permits > 1 && (kind == request_kind::acquire || kind == request_kind::renew))
        keys.companions[keys.count++] = companion::slots;
    return keys;
}

}  // namespace

std::size_t lock::encode(const request& r, char* out, std::size_t capacity) const noexcept {
    resp_writer writer(out, capacity);
    const std::array<char, token_hex_bytes> token = tokens_.hex(r.token_slot);
    if (r.native) {
        writer.array(7);
        writer.bulk("SET");
        writer.bulk(name());
        writer.bulk(std::string_view(token.data(), token.size()));
        writer.bulk("NX");
        writer.bulk("PX");
        writer.bulk(ttl_ms_);
        writer.bulk("GET");
        return writer.status() == errc::ok ? writer.size() : 0;
    }
    if (r.kind() == request_kind::replicate) {
        writer.array(3);
        writer.bulk("WAIT");
        writer.bulk(std::int64_t{replicas_to_wait_});
        writer.bulk(replica_wait_ms_);
        return writer.status() == errc::ok ? writer.size() : 0;
    }
    const script& s = script_for(r.kind());
    const bool queued =
        fair_ && (r.kind() == request_kind::acquire || r.kind() == request_kind::release);
    const key_list keys = companions_for(r.kind(), fair_, fencing_, permits_);
    const std::array<companion, 4>& companions = keys.companions;
    const std::size_t companion_count = keys.count;
    // ARGV: the token, and the number(s) the script needs.
    // A semaphore's acquire, and its fair release (which wakes as many waiters as permits are
    // free, even once the set has gone), carry N.
    const bool counted = permits_ > 1 && (r.kind() == request_kind::acquire || queued);
    // A fenced semaphore's renewal names its permit, to put its number back if it was lost.
    const bool renews_permit = fencing_ && permits_ > 1 && r.kind() == request_kind::renew;
    std::size_t number_count = r.kind() == request_kind::release ? 0 : 1;
    if (queued && r.kind() == request_kind::acquire) ++number_count;
    if (counted || renews_permit) ++number_count;
    // The fair scripts' optional last argument: "stay" for a release, "join" for an acquire.
    const bool in_line_only = queued && r.in_line_only;
    if (in_line_only) ++number_count;
    writer.array(3 + 1 + companion_count + 1 + number_count);
    writer.bulk(r.eval ? std::string_view("EVAL") : std::string_view("EVALSHA"));
    writer.bulk(r.eval ? s.text : std::string_view(s.digest.data(), s.digest.size()));
    writer.bulk(static_cast<std::int64_t>(1 + companion_count));
    writer.bulk(name());
    for (std::size_t i = 0; i < companion_count; ++i) {
        std::array<char, key_bytes_max> key{};
        const std::size_t key_size =
            write_companion_key(name(), companions[i], key.data(), key.size());
        EDGELOCK_ASSERT(key_size > 0);
        writer.bulk(std::string_view(key.data(), key_size));
    }
    writer.bulk(std::string_view(token.data(), token.size()));
    if (r.kind() == request_kind::raise) {
        writer.bulk(fence_candidate_);
    } else if (r.kind() != request_kind::release) {
        writer.bulk(ttl_ms_);
    }
    if (queued && r.kind() == request_kind::acquire) writer.bulk(queue_entry_ttl_ms_);
    if (counted) writer.bulk(std::int64_t{permits_});
    if (renews_permit) writer.bulk(std::int64_t{permit_of(fence_, permits_)});
    if (in_line_only) writer.bulk(r.kind() == request_kind::acquire ? "join" : "stay");
    return writer.status() == errc::ok ? writer.size() : 0;
}

const script& lock::script_for(request_kind kind) const noexcept {
    if (permits_ > 1) {
        switch (kind) {
            case request_kind::acquire:
                return fair_ ? fair_permit_acquire_script : permit_acquire_script;
            case request_kind::raise: return raise_script;  // never sent: one instance
            case request_kind::renew: return permit_renew_script;
            default: return fair_ ? fair_permit_release_script : permit_release_script;
        }
    }
    switch (kind) {
        case request_kind::acquire: return fair_ ? fair_acquire_script : acquire_script;
        case request_kind::raise: return raise_script;
        case request_kind::renew: return renew_script;
        default: return fair_ ? fair_release_script : release_script;
    }
}

bool lock::native_acquire(std::uint8_t instance) const noexcept {
    return !fencing_ && !fair_ && permits_ == 1 && ((scripted_acquire_ >> instance) & 1u) == 0;
}

void lock::note_incurable(const request& sent, const reply_node& reply) noexcept {
    if (!sent.current || sent.kind() != request_kind::acquire) return;
    const errc why = incurable_refusal(reply);
    if (why == errc::ok) return;
    ++tally_.incurable;
    tally_.incurable_why = why;
}

void lock::handle_reply(std::uint8_t instance, request sent, bool token_replaced,
                        const reply_node& reply, errc& code) noexcept {
    if (sent.native) {
        handle_native_acquire_reply(instance, sent, reply, code);
        return;
    }
    if (is_noscript(reply)) {
        // The server's script cache is empty (first contact, restart, SCRIPT FLUSH): send
        // the text. The running round's requests are always re-sent; a stale release only
        // when re-sending it cannot delete a key we set later (see resendable()).
        const bool resend = sent.current || resendable(instance, sent, token_replaced);
        if (resend && requeue(instance, sent, true)) return;
        if (sent.current) record(instance, outcome::failed);
        return;
    }
    outcome result = outcome::failed;
    std::int64_t fence = 0;
    if (reply.type == reply_type::error) {
        code = errc::error_reply;
        note_incurable(sent, reply);
    } else if (sent.kind() == request_kind::acquire) {
        if (reply.type == reply_type::nil) {
            result = outcome::refused;
        } else if (fencing_ ? parse_fence(reply, fence)
                            : reply.type == reply_type::integer && reply.integer == 0) {
            result = outcome::ok;
            if (sent.current) fence_candidate_ = std::max(fence_candidate_, fence);
        } else {
            code = errc::unexpected_reply;
        }
    } else if (sent.kind() == request_kind::replicate) {
        if (reply.type == reply_type::integer && reply.integer >= 0) {
            result = reply.integer >= replicas_to_wait_ ? outcome::ok : outcome::refused;
        } else {
            code = errc::unexpected_reply;
        }
    } else if (reply.type == reply_type::integer && (reply.integer == 0 || reply.integer == 1)) {
        result = reply.integer == 1 ? outcome::ok : outcome::refused;
    } else {
        code = errc::unexpected_reply;
    }
    if (sent.current) record(instance, result);
}

// SET key token NX PX ttl GET's answer (lock.hpp, "The acquire on the wire").
void lock::handle_native_acquire_reply(std::uint8_t instance, request sent, const reply_node& reply,
                                       errc& code) noexcept {
    if (is_syntax_error(reply)) {  // a server before 7.0: the script, on this connection
        scripted_acquire_ = static_cast<std::uint8_t>(scripted_acquire_ | 1u << instance);
        // Its text, whatever connection it goes out on: under Redis Cluster the refusal may
        // come from the node an ASK sent the claim to, and the retry goes to the slot's owner
        // first, a connection that never refused (and whose change forgets the mark): asked
        // SET NX PX GET again there, the claim would bounce between the two for as long as
        // the slot moves.
        if (sent.current) follow_up(instance, request_kind::acquire, true);
        return;
    }
    const bool key_was_free = reply.type == reply_type::nil;
    const bool key_held = reply.type == reply_type::bulk_string;
    const std::array<char, token_hex_bytes> token = tokens_.hex(sent.token_slot);
    const bool held_by_us = key_held && reply.text == std::string_view(token.data(), token.size());
    if (held_by_us) {
        // Our earlier attempt's key, expiring a TTL after that attempt: it counts once a
        // renew has extended it from this one.
        if (sent.current) follow_up(instance, request_kind::renew);
        return;
    }
    if (!key_was_free && !key_held) {
        code = reply.type == reply_type::error ? errc::error_reply : errc::unexpected_reply;
        note_incurable(sent, reply);
    }
    if (!sent.current) return;
    record(instance, key_was_free ? outcome::ok : key_held ? outcome::refused : outcome::failed);
}

// Queues the running round's next request on an instance that answered but does not count
// yet; without room for it (and for the release that may follow) the instance fails.
void lock::follow_up(std::uint8_t instance, request_kind kind, bool eval) noexcept {
    if (!enqueue(instance, kind, true, eval, 2)) record(instance, outcome::failed);
}

}  // namespace edgelock
