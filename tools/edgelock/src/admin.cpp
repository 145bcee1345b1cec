#include "admin.hpp"

#include <hiredis/hiredis.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "edgelock/error_code.hpp"
#include "edgelock/hiredis_lock.hpp"
#include "edgelock/keys.hpp"
#include "edgelock/limits.hpp"
#include "edgelock/session/address.hpp"
#include "edgelock/scripts.hpp"
#include "errors.hpp"
#include "exit_codes.hpp"
#include "quote.hpp"

namespace edgelock::cli {
namespace {


struct endpoint {
    std::string address;  // host:port, for messages
    session::server_address server;
};

struct failure {
    std::error_code ec;
    std::string detail;  // Redis's own error text, for error replies
};

std::string describe(const failure& f) {
    return f.detail.empty() ? cli::describe(f.ec) : cli::describe(f.ec) + ": " + shown(f.detail);
}

struct reply_deleter {
    void operator()(redisReply* r) const noexcept { freeReplyObject(r); }
};
using reply_ptr = std::unique_ptr<redisReply, reply_deleter>;

timeval to_timeval(std::int64_t ms) {
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(ms / 1000);
    tv.tv_usec = static_cast<suseconds_t>((ms % 1000) * 1000);
    return tv;
}

endpoint endpoint_of(const std::string& url) {
    endpoint ep;
    ep.address = display_address(url);
    session::parse_server_url(url, ep.server);  // already checked by the option parser
    return ep;
}

// One blocking connection, every reply bounded by the timeout.
class connection {
public:
    connection() = default;
    ~connection() {
        if (context_ != nullptr) redisFree(context_);
    }
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;

    bool open(const endpoint& ep, std::int64_t timeout_ms, failure& f) {
        errno = 0;
        context_ = redisConnectWithTimeout(std::string(ep.server.host.view()).c_str(), ep.server.port,
                                           to_timeval(timeout_ms));
        if (context_ == nullptr) {
            f.ec = make_error_code(transport_errc::out_of_memory);
            return false;
        }
        if (context_->err != 0) {
            f.ec = context_->err == REDIS_ERR_OTHER ? make_error_code(transport_errc::unknown_host) : io_error(errno);
            return false;
        }
        redisSetTimeout(context_, to_timeval(timeout_ms));
        const std::string user(ep.server.user.view());
        const std::string password(ep.server.password.view());
        if (!password.empty()) {
            reply_ptr r = user.empty() ? command({"AUTH", password}, f) : command({"AUTH", user, password}, f);
            if (!r) return false;
            if (r->type == REDIS_REPLY_ERROR) {
                f.ec = make_error_code(transport_errc::auth_failed);
                f.detail = r->str;
                return false;
            }
        }
        if (ep.server.db != 0) {
            reply_ptr r = command({"SELECT", std::to_string(ep.server.db)}, f);
            if (!r) return false;
            if (r->type == REDIS_REPLY_ERROR) {
                f.ec = make_error_code(transport_errc::select_failed);
                f.detail = r->str;
                return false;
            }
        }
        return true;
    }

    // The reply, or null with `f` filled when the connection failed. Error replies are
    // returned as replies.
    reply_ptr command(const std::vector<std::string>& args, failure& f) {
        std::vector<const char*> argv;
        std::vector<std::size_t> lengths;
        for (const std::string& a : args) {
            argv.push_back(a.data());
            lengths.push_back(a.size());
        }
        errno = 0;
        auto* r = static_cast<redisReply*>(
            redisCommandArgv(context_, static_cast<int>(argv.size()), argv.data(), lengths.data()));
        if (r == nullptr) f.ec = io_error(errno);
        return reply_ptr(r);
    }

private:
    std::error_code io_error(int saved_errno) const {
        switch (context_->err) {
            case REDIS_ERR_IO:
                if (saved_errno == EAGAIN || saved_errno == EINPROGRESS || saved_errno == ETIMEDOUT) {
                    return make_error_code(transport_errc::command_timeout);
                }
                if (saved_errno != 0) return {saved_errno, std::generic_category()};
                return make_error_code(errc::io_error);
            case REDIS_ERR_EOF: return make_error_code(transport_errc::connection_closed);
            case REDIS_ERR_PROTOCOL: return make_error_code(errc::protocol_error);
            default: return make_error_code(errc::io_error);
        }
    }

    redisContext* context_ = nullptr;
};

bool error_reply(const reply_ptr& r, failure& f) {
    if (r->type != REDIS_REPLY_ERROR) return false;
    f.ec = make_error_code(errc::error_reply);
    f.detail = r->str;
    return true;
}

// The endpoints to ask: the --redis instances, or the master a sentinel names.
bool resolve(const options& o, std::vector<endpoint>& out, failure& f) {
    if (o.sentinel_urls.empty()) {
        for (const std::string& url : o.redis_urls) out.push_back(endpoint_of(url));
        return true;
    }
    for (const std::string& url : o.sentinel_urls) {
        connection c;
        if (!c.open(endpoint_of(url), o.redis_timeout_ms, f)) continue;
        reply_ptr r = c.command({"SENTINEL", "get-master-addr-by-name", o.master_name}, f);
        if (!r || error_reply(r, f)) continue;
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2) continue;
        const std::string_view host(r->element[0]->str, r->element[0]->len);
        const std::string_view port_text(r->element[1]->str, r->element[1]->len);
        endpoint master;
        std::uint16_t port = 0;
        if (!session::parse_port(port_text, port) || session::set_endpoint(master.server, host, port).code != errc::ok) {
            continue;
        }
        master.address = shown(std::string(session::format_endpoint(master.server).view()));
        out.push_back(master);
        return true;
    }
    if (!f.ec) f.ec = make_error_code(transport_errc::no_master);
    f.detail = "no sentinel named a master " + quote(o.master_name);
    return false;
}

std::string fence_key(const std::string& name) {
    std::array<char, key_bytes_max> key{};
    const std::size_t size = write_fence_key(name, key.data(), key.size());
    return std::string(key.data(), size);
}

struct instance_status {
    std::string address;
    failure problem;
    bool held = false;
    std::string token;
    long long ttl_ms = -2;
    std::string fence = "0";
};

instance_status read_status(const endpoint& ep, const options& o) {
    instance_status s;
    s.address = ep.address;
    connection c;
    if (!c.open(ep, o.redis_timeout_ms, s.problem)) return s;
    reply_ptr token = c.command({"GET", o.name}, s.problem);
    if (!token || error_reply(token, s.problem)) return s;
    reply_ptr ttl = c.command({"PTTL", o.name}, s.problem);
    if (!ttl || error_reply(ttl, s.problem)) return s;
    reply_ptr fence = c.command({"GET", fence_key(o.name)}, s.problem);
    if (!fence || error_reply(fence, s.problem)) return s;
    if (token->type == REDIS_REPLY_STRING) {
        s.held = true;
        s.token.assign(token->str, token->len);
    }
    if (ttl->type == REDIS_REPLY_INTEGER) s.ttl_ms = ttl->integer;
    if (fence->type == REDIS_REPLY_STRING) s.fence.assign(fence->str, fence->len);
    return s;
}

std::string ttl_text(long long ttl_ms) {
    if (ttl_ms == -1) return "no expiry (not set by edgelock)";
    if (ttl_ms < 0) return "-";
    return format_duration(ttl_ms) + " left";
}

// The exit code and one-line message when fewer than a majority of instances answered.
int report_unreachable(const char* verb, const options& o, const std::vector<const failure*>& failures,
                       const std::vector<std::string>& addresses) {
    std::string text;
    for (std::size_t i = 0; i < failures.size(); ++i) {
        if (!text.empty()) text += ", ";
        text += addresses[i] + ": " + describe(*failures[i]);
    }
    std::fprintf(stderr, "edgelock: cannot %s lock %s: %s\n", verb, quote(o.name).c_str(), text.c_str());
    return exit_code_for(failures.front()->ec);
}

}  // namespace

int show_status(const options& o) {
    std::vector<endpoint> endpoints;
    failure f;
    if (!resolve(o, endpoints, f)) {
        return report_unreachable("read", o, {&f}, {"Sentinel"});
    }
    std::vector<instance_status> states;
    std::vector<const failure*> failures;
    std::vector<std::string> failed_addresses;
    for (const endpoint& ep : endpoints) {
        states.push_back(read_status(ep, o));
    }
    for (const instance_status& s : states) {
        if (s.problem.ec) {
            failures.push_back(&s.problem);
            failed_addresses.push_back(s.address);
        }
    }
    const std::size_t quorum = quorum_of(states.size());
    if (states.size() - failures.size() < quorum) return report_unreachable("read", o, failures, failed_addresses);

    std::size_t most_held = 0;
    std::printf("lock     %s\n", shown(o.name).c_str());
    for (const instance_status& s : states) {
        std::printf("\ninstance %s\n", s.address.c_str());
        if (s.problem.ec) {
            std::printf("error    %s\n", describe(s.problem).c_str());
            continue;
        }
        std::size_t same = 0;
        for (const instance_status& other : states) same += other.held && other.token == s.token ? 1 : 0;
        if (s.held && same > most_held) most_held = same;
        std::printf("holder   %s\n", s.held ? shown(s.token).c_str() : "none");
        std::printf("ttl      %s\n", ttl_text(s.ttl_ms).c_str());
        std::printf("fence    %s\n", shown(s.fence).c_str());
    }
    const bool held = most_held >= quorum;
    std::printf("\n%s\n", held ? "held" : "free");
    return held ? exit_ok : exit_negative;
}

int release_token(const options& o) {
    std::vector<endpoint> endpoints;
    failure f;
    if (!resolve(o, endpoints, f)) return report_unreachable("release", o, {&f}, {"Sentinel"});

    std::size_t deleted = 0;
    std::vector<failure> problems(endpoints.size());
    std::vector<const failure*> failures;
    std::vector<std::string> failed_addresses;
    for (std::size_t i = 0; i < endpoints.size(); ++i) {
        connection c;
        if (!c.open(endpoints[i], o.redis_timeout_ms, problems[i])) continue;
        reply_ptr r = c.command({"EVAL", std::string(release_script.text), "1", o.name, o.token}, problems[i]);
        if (!r || error_reply(r, problems[i])) continue;
        if (r->type == REDIS_REPLY_INTEGER && r->integer == 1) ++deleted;
    }
    for (std::size_t i = 0; i < endpoints.size(); ++i) {
        if (problems[i].ec) {
            failures.push_back(&problems[i]);
            failed_addresses.push_back(endpoints[i].address);
        }
    }
    const std::size_t quorum = quorum_of(endpoints.size());
    if (deleted < quorum && endpoints.size() - failures.size() < quorum) {
        return report_unreachable("release", o, failures, failed_addresses);
    }
    if (deleted >= quorum) {
        std::printf("released lock %s (deleted on %zu of %zu instances)\n", quote(o.name).c_str(), deleted,
                    endpoints.size());
        return exit_ok;
    }
    std::printf("not released: token %s does not hold lock %s", shown(o.token).c_str(), quote(o.name).c_str());
    if (deleted > 0) std::printf(" (removed it from %zu of %zu instances)", deleted, endpoints.size());
    std::printf("\n");
    return exit_negative;
}

}  // namespace edgelock::cli
