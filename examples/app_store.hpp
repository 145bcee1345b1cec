// SPDX-License-Identifier: Apache-2.0
// The examples' application data (an order table, a stock counter), kept in Redis so the
// examples need nothing else. A real application would use its own database; this is plain
// hiredis and has nothing to do with edgelock. One app_store per thread.
#pragma once

#include <hiredis.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "edgelock/session/address.hpp"

class app_store {
public:
    explicit app_store(const std::string& url) {
        edgelock::session::node_address address;
        if (edgelock::session::parse_node_url(url, address).code != edgelock::errc::ok)
            die("bad address " + url);
        const std::string host(address.host.view());
        context_ = redisConnect(host.c_str(), address.port);
        if (context_ == nullptr || context_->err != 0) die("cannot connect to " + url);
        const std::string password(address.password.view());
        if (!password.empty()) command({"AUTH", password});
    }
    ~app_store() { redisFree(context_); }
    app_store(const app_store&) = delete;
    app_store& operator=(const app_store&) = delete;

    std::string get(const std::string& key) { return command({"GET", key}).text; }
    void set(const std::string& key, const std::string& value) { command({"SET", key, value}); }
    long long incr(const std::string& key) { return command({"INCR", key}).integer; }
    void del(const std::string& key) { command({"DEL", key}); }
    std::string hget(const std::string& key, const std::string& field) {
        return command({"HGET", key, field}).text;
    }
    // A Lua script with one key; returns its integer result.
    long long eval(const std::string& script, const std::string& key,
                   const std::vector<std::string>& args) {
        std::vector<std::string> argv = {"EVAL", script, "1", key};
        argv.insert(argv.end(), args.begin(), args.end());
        return command(argv).integer;
    }

    struct reply {
        std::string text;
        long long integer = 0;
    };

    reply command(const std::vector<std::string>& args) {
        std::vector<const char*> argv;
        std::vector<size_t> lengths;
        for (const std::string& a : args) {
            argv.push_back(a.c_str());
            lengths.push_back(a.size());
        }
        auto* r = static_cast<redisReply*>(
            redisCommandArgv(context_, static_cast<int>(argv.size()), argv.data(), lengths.data()));
        if (r == nullptr) die("connection to Redis lost");
        if (r->type == REDIS_REPLY_ERROR) die(std::string("Redis error: ") + r->str);
        reply result;
        if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)
            result.text.assign(r->str, r->len);
        if (r->type == REDIS_REPLY_INTEGER) result.integer = r->integer;
        freeReplyObject(r);
        return result;
    }

private:
    [[noreturn]] static void die(const std::string& why) {
        std::fprintf(stderr, "app_store: %s\n", why.c_str());
        std::exit(2);
    }

    redisContext* context_ = nullptr;
};
