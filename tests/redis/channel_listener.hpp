// SPDX-License-Identifier: Apache-2.0
// A second connection listening to every waiter's channel of one line (a fair lock's or
// semaphore's queue key, ":" and a token: keys.hpp, write_wake_channel), for the script tests
// that check who a script wakes, and that it wakes each on its own channel.
#pragma once

#include <hiredis.h>
#include <poll.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

namespace edgelock::testing {

class channel_listener {
public:
    // `line`: a queue key without glob characters (* ? [ \), as the tests' are.
    channel_listener(std::uint16_t port, const std::string& line) : line_(line) {
        const timeval connect_timeout{2, 0};
        context_.reset(redisConnectWithTimeout("127.0.0.1", port, connect_timeout));
        if (!context_ || context_->err) throw std::runtime_error("cannot connect the listener");
        const std::string pattern = line + ":*";
        auto* reply = static_cast<redisReply*>(
            redisCommand(context_.get(), "PSUBSCRIBE %b", pattern.data(), pattern.size()));
        if (reply == nullptr) throw std::runtime_error("PSUBSCRIBE failed");
        freeReplyObject(reply);
    }

    // The payload of the next message (the token woken, or a grant: the token, a space and
    // the fence), or "" when none comes within 300 ms, or "published on <channel>" when it
    // came on another channel than its token's. (A hiredis read timeout would break the
    // connection for good: poll first.)
    std::string next() {
        void* raw = nullptr;
        if (redisGetReplyFromReader(context_.get(), &raw) != REDIS_OK) return "";
        if (raw == nullptr) {
            pollfd readable{context_->fd, POLLIN, 0};
            if (poll(&readable, 1, 300) != 1) return "";
            if (redisGetReply(context_.get(), &raw) != REDIS_OK || raw == nullptr) return "";
        }
        const std::unique_ptr<redisReply, decltype(&freeReplyObject)> reply(
            static_cast<redisReply*>(raw), freeReplyObject);
        if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 4) return "";
        const std::string channel(reply->element[2]->str, reply->element[2]->len);
        std::string payload(reply->element[3]->str, reply->element[3]->len);
        if (channel != line_ + ":" + payload.substr(0, payload.find(' ')))
            return "published on " + channel;
        return payload;
    }

private:
    std::string line_;
    struct free_context {
        void operator()(redisContext* c) const { redisFree(c); }
    };
    std::unique_ptr<redisContext, free_context> context_;
};

}  // namespace edgelock::testing
