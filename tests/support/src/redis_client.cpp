#include "edgelock/testing/redis_client.hpp"

#include <hiredis/hiredis.h>

#include <sstream>
#include <stdexcept>

namespace edgelock::testing {
namespace {

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

}  // namespace

redis_client::redis_client(const std::string& host, std::uint16_t port, const std::string& password,
                           const std::string& user, std::chrono::milliseconds timeout) {
    context_ = redisConnectWithTimeout(host.c_str(), port, to_timeval(std::chrono::seconds(2)));
    if (context_ == nullptr || context_->err != 0) {
        const std::string why = context_ ? context_->errstr : "out of memory";
        if (context_) redisFree(context_);
        context_ = nullptr;
        throw std::runtime_error("redis_client: connect to " + host + ":" + std::to_string(port) +
                                 ": " + why);
    }
    redisSetTimeout(context_, to_timeval(timeout));
    if (!password.empty()) {
        const redis_reply r = user.empty() ? command({"AUTH", password}) : command({"AUTH", user, password});
        if (r.is_error()) {
            redisFree(context_);
            context_ = nullptr;
            throw std::runtime_error("redis_client: AUTH: " + r.text);
        }
    }
}

redis_client::~redis_client() {
    if (context_ != nullptr) redisFree(context_);
}

redis_reply redis_client::command(const std::vector<std::string>& args) {
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
        throw std::runtime_error(std::string("redis_client: ") + (args.empty() ? "" : args[0]) + ": " +
                                 context_->errstr);
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
