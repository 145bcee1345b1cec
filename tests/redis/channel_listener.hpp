// SPDX-License-Identifier: Apache-2.0
// A second connection subscribed to one pub/sub channel (a fair lock's or semaphore's line
// key), for the script tests that check who a script wakes.
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
    channel_listener(std::uint16_t port, const std::string& channel) {
        const timeval connect_timeout{2, 0};
        context_.reset(redisConnectWithTimeout("127.0.0.1", port, connect_timeout));
        if (!context_ || context_->err) throw std::runtime_error("cannot connect the listener");
        auto* reply = static_cast<redisReply*>(
            redisCommand(context_.get(), "SUBSCRIBE %b", channel.data(), channel.size()));
        if (reply == nullptr) throw std::runtime_error("SUBSCRIBE failed");
        freeReplyObject(reply);
    }

    // The payload of the next message, or "" when none comes within 300 ms. (A hiredis read
    // timeout would break the connection for good: poll first.)
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
        if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 3) return "";
        return std::string(reply->element[2]->str, reply->element[2]->len);
    }

private:
    struct free_context {
        void operator()(redisContext* c) const { redisFree(c); }
    };
    std::unique_ptr<redisContext, free_context> context_;
};

}  // namespace edgelock::testing
