// SPDX-License-Identifier: Apache-2.0
// edgelock sim (internal): the simulated socket as session::write_requests' sink, shared by
// the client's instance connections (workload.cpp) and its cluster connections
// (workload_cluster.cpp).
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "edgelock/assert.hpp"
#include "edgelock/limits.hpp"
#include "edgelock/resp_writer.hpp"
#include "edgelock/scripts.hpp"
#include "edgelock/sim/redis_model.hpp"
#include "edgelock/sim/sim_connection.hpp"

namespace edgelock::sim {

// The simulated socket as session::write_requests' sink: each request is sent as a message of
// its own, and what was sent is noted for the workload's points. The write window closed
// reads as a full buffer. A client that deletes without comparing (the mutation tests'
// broken one) sends a plain DEL for each release; one that jumps the line sends the plain
// acquire script for each fair acquire, a semaphore's plain permit_acquire for each fair one
// (same answers: 0 or nil).
struct request_sink {
    sim_connection* to = nullptr;
    bool deletes_without_compare = false;
    bool jumps_the_line = false;
    std::string_view lock_name;
    bool sent_acquire = false;
    bool sent_renew = false;
    std::size_t sent = 0;
    std::array<char, request_bytes_max> buffer{};

    char* cursor() noexcept { return buffer.data(); }
    std::size_t room() const noexcept { return to->window_open() ? buffer.size() : 0; }
    bool commit(std::size_t size) {
        // Redis Cluster: an ASKING before the request, in the same write, stays in front.
        constexpr std::string_view asking = "*1\r\n$6\r\nASKING\r\n";
        const std::string_view written(buffer.data(), size);
        const std::size_t prefix = written.substr(0, asking.size()) == asking ? asking.size() : 0;
        std::string bytes(written.substr(prefix));
        const script_id kind = classify_request(bytes);
        sent_acquire = sent_acquire || kind == script_id::acquire ||
                       kind == script_id::fair_acquire || kind == script_id::permit_acquire ||
                       kind == script_id::fair_permit_acquire;
        sent_renew = sent_renew || kind == script_id::renew || kind == script_id::permit_renew;
        if (jumps_the_line && kind == script_id::fair_acquire) bytes = plain_acquire(bytes);
        if (jumps_the_line && kind == script_id::fair_permit_acquire)
            bytes = plain_permit_acquire(bytes);
        if (kind == script_id::release && deletes_without_compare) {
            std::array<char, request_bytes_max> del{};
            resp_writer writer(del.data(), del.size());
            writer.array(2);
            writer.bulk("DEL");
            writer.bulk(lock_name);
            bytes.assign(del.data(), writer.size());
        }
        to->send(std::string(written.substr(0, prefix)) + bytes);
        ++sent;
        return true;
    }

    // EVAL(SHA) fair_acquire 3 lock queue qttl token ttl entry_ttl -> EVAL acquire 1 lock token ttl
    static std::string plain_acquire(const std::string& fair) {
        request_view r;
        EDGELOCK_ASSERT(parse_request(fair.data(), fair.size(), r) && r.count >= 9);
        const std::size_t argv = 3 + static_cast<std::size_t>(r.args[2][0] - '0');
        std::array<char, request_bytes_max> out{};
        resp_writer writer(out.data(), out.size());
        writer.array(6);
        writer.bulk("EVAL");
        writer.bulk(acquire_script.text);
        writer.bulk("1");
        writer.bulk(r.args[3]);
        writer.bulk(r.args[argv]);
        writer.bulk(r.args[argv + 1]);
        return std::string(out.data(), writer.size());
    }

    // EVAL(SHA) fair_permit_acquire K set queue qttl [fence slots] token ttl entry_ttl permits
    //   -> EVAL permit_acquire K-2 set [fence slots] token ttl permits
    static std::string plain_permit_acquire(const std::string& fair) {
        request_view r;
        EDGELOCK_ASSERT(parse_request(fair.data(), fair.size(), r) && r.count >= 10);
        const auto keys = static_cast<std::size_t>(r.args[2][0] - '0');
        const std::size_t argv = 3 + keys;
        const std::size_t fenced_keys = keys - 3;  // the fence counter and the slots key, or none
        std::array<char, request_bytes_max> out{};
        resp_writer writer(out.data(), out.size());
        writer.array(7 + fenced_keys);
        writer.bulk("EVAL");
        writer.bulk(permit_acquire_script.text);
        writer.bulk(static_cast<std::int64_t>(1 + fenced_keys));
        writer.bulk(r.args[3]);
        for (std::size_t k = 0; k < fenced_keys; ++k) writer.bulk(r.args[6 + k]);
        writer.bulk(r.args[argv]);
        writer.bulk(r.args[argv + 1]);
        writer.bulk(r.args[argv + 3]);
        return std::string(out.data(), writer.size());
    }
};

}  // namespace edgelock::sim
