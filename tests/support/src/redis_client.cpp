// SPDX-License-Identifier: Apache-2.0
#include "edgelock/testing/redis_client.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "edgelock/testing/tls_material.hpp"
#include "tls_stream.hpp"

namespace edgelock::testing {
namespace {

constexpr std::chrono::milliseconds connect_timeout{2'000};

timeval to_timeval(std::chrono::milliseconds ms) {
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
    return tv;
}

redis_reply convert(const redisReply* r) {
    redis_reply out;
    switch (r->type) {
        case REDIS_REPLY_STRING: out.type = redis_reply::kind::string; break;
        case REDIS_REPLY_STATUS: out.type = redis_reply::kind::status; break;
        case REDIS_REPLY_ERROR: out.type = redis_reply::kind::error; break;
        case REDIS_REPLY_INTEGER: out.type = redis_reply::kind::integer; break;
        case REDIS_REPLY_ARRAY: out.type = redis_reply::kind::array; break;
        default: out.type = redis_reply::kind::nil; break;
    }
    if (r->str != nullptr) out.text.assign(r->str, r->len);
    out.integer = r->integer;
    for (std::size_t i = 0; i < r->elements; ++i) out.elements.push_back(convert(r->element[i]));
    return out;
}

// RESP: the command as an array of bulk strings.
std::string encode(const std::vector<std::string>& args) {
    std::string out = "*" + std::to_string(args.size()) + "\r\n";
    for (const std::string& a : args) out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
    return out;
}

struct reader_free {
    void operator()(redisReader* reader) const { redisReaderFree(reader); }
};
struct reply_free {
    void operator()(redisReply* reply) const { freeReplyObject(reply); }
};

}  // namespace

namespace detail {

// One TLS connection and hiredis's reader, which turns the bytes read into replies.
class tls_session {
public:
    tls_session(const std::string& host, std::uint16_t port, const client_tls& options,
                deadline until)
        : stream_(host, port, options, until), reader_(redisReaderCreate()) {
        if (!reader_) throw std::runtime_error("out of memory");
    }

    redis_reply round_trip(const std::vector<std::string>& args, deadline until) {
        stream_.write(encode(args), until);
        for (;;) {
            void* raw = nullptr;
            if (redisReaderGetReply(reader_.get(), &raw) != REDIS_OK) {
                throw std::runtime_error(std::string("protocol error: ") + reader_->errstr);
            }
            if (raw != nullptr) {
                const std::unique_ptr<redisReply, reply_free> reply(static_cast<redisReply*>(raw));
                return convert(reply.get());
            }
            const std::string bytes = stream_.read_some(until);
            redisReaderFeed(reader_.get(), bytes.data(), bytes.size());
        }
    }

private:
    tls_stream stream_;
    std::unique_ptr<redisReader, reader_free> reader_;
};

}  // namespace detail

client_tls client_tls::with_client_cert(const tls_material& material) {
    client_tls options = without_client_cert(material);
    options.cert_file = material.client_cert();
    options.key_file = material.client_key();
    return options;
}

client_tls client_tls::without_client_cert(const tls_material& material) {
    client_tls options;
    options.ca_file = material.ca_file();
    return options;
}

redis_client::redis_client(const std::string& host, std::uint16_t port, const std::string& password,
                           const std::string& user, std::chrono::milliseconds timeout)
    : timeout_(timeout) {
    context_ = redisConnectWithTimeout(host.c_str(), port, to_timeval(connect_timeout));
    if (context_ == nullptr || context_->err != 0) {
        const std::string why = context_ ? context_->errstr : "out of memory";
        if (context_) redisFree(context_);
        context_ = nullptr;
        throw std::runtime_error("redis_client: connect to " + host + ":" + std::to_string(port) +
                                 ": " + why);
    }
    redisSetTimeout(context_, to_timeval(timeout));
    authenticate(password, user);
}

redis_client::redis_client(const std::string& host, std::uint16_t port, const client_tls& tls,
                           const std::string& password, const std::string& user,
                           std::chrono::milliseconds timeout)
    : uses_tls_(true), timeout_(timeout) {
    const auto until = std::chrono::steady_clock::now() + std::min(timeout, connect_timeout);
    try {
        tls_ = std::make_unique<detail::tls_session>(host, port, tls, until);
    } catch (const std::exception& e) {
        throw std::runtime_error("redis_client: connect to " + host + ":" + std::to_string(port) +
                                 ": " + e.what());
    }
    authenticate(password, user);
}

redis_client::~redis_client() {
    if (context_ != nullptr) redisFree(context_);
}

// A constructor that throws runs no destructor: the plain context is freed here.
void redis_client::authenticate(const std::string& password, const std::string& user) {
    if (password.empty()) return;
    const redis_reply r =
        user.empty() ? command({"AUTH", password}) : command({"AUTH", user, password});
    if (!r.is_error()) return;
    if (context_ != nullptr) redisFree(context_);
    context_ = nullptr;
    throw std::runtime_error("redis_client: AUTH: " + r.text);
}

redis_reply redis_client::command(const std::vector<std::string>& args) {
    return uses_tls_ ? tls_command(args) : plain_command(args);
}

// After a failure the session is dropped, as hiredis drops a context after an error: a reply
// that arrives late must not be taken for the next command's.
redis_reply redis_client::tls_command(const std::vector<std::string>& args) {
    const std::string name = args.empty() ? "" : args[0];
    if (!tls_) {
        throw std::runtime_error("redis_client: " + name +
                                 ": not connected (an earlier command failed)");
    }
    try {
        return tls_->round_trip(args, std::chrono::steady_clock::now() + timeout_);
    } catch (const std::exception& e) {
        tls_.reset();
        throw std::runtime_error("redis_client: " + name + ": " + e.what());
    }
}

redis_reply redis_client::plain_command(const std::vector<std::string>& args) {
    if (context_ == nullptr) throw std::runtime_error("redis_client: not connected");
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    for (const std::string& a : args) {
        argv.push_back(a.data());
        lengths.push_back(a.size());
    }
    auto* reply = static_cast<redisReply*>(
        redisCommandArgv(context_, static_cast<int>(args.size()), argv.data(), lengths.data()));
    if (reply == nullptr) {
        throw std::runtime_error(std::string("redis_client: ") + (args.empty() ? "" : args[0]) +
                                 ": " + context_->errstr);
    }
    redis_reply out = convert(reply);
    freeReplyObject(reply);
    return out;
}

std::string redis_client::get(const std::string& key) { return command({"GET", key}).text; }

bool redis_client::exists(const std::string& key) { return command({"EXISTS", key}).integer == 1; }

long long redis_client::pttl(const std::string& key) { return command({"PTTL", key}).integer; }

void redis_client::set(const std::string& key, const std::string& value) {
    const redis_reply r = command({"SET", key, value});
    if (r.is_error()) throw std::runtime_error("redis_client: SET: " + r.text);
}

std::string redis_client::role() { return info_field("replication", "role"); }

std::string redis_client::info_field(const std::string& section, const std::string& field) {
    const redis_reply r = command({"INFO", section});
    std::istringstream lines(r.text);
    std::string line;
    const std::string prefix = field + ":";
    while (std::getline(lines, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.compare(0, prefix.size(), prefix) == 0) return line.substr(prefix.size());
    }
    return "";
}

}  // namespace edgelock::testing
