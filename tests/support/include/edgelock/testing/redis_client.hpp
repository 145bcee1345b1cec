// edgelock test support: a small blocking admin client for tests (GET, SET, INFO, DEBUG, ...).
//
// Deliberately independent of the transports under test: it uses hiredis directly and throws
// std::runtime_error on connection errors and protocol errors, so a broken set-up fails the
// test at once. Error replies from Redis are returned as replies (type error), not thrown.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

struct redisContext;

namespace edgelock::testing {

struct redis_reply {
    enum class kind { string, status, error, integer, nil, array };
    kind type = kind::nil;
    std::string text;          // string, status, error
    long long integer = 0;     // integer
    std::vector<redis_reply> elements;  // array

    bool is_nil() const noexcept { return type == kind::nil; }
    bool is_error() const noexcept { return type == kind::error; }
};

class redis_client {
public:
    // Connects to host:port (and AUTHs when `password` is set, as `user` when that is set).
    // Throws on failure. Command timeout defaults to 10 s (DEBUG SLEEP etc. need more: pass it).
    redis_client(const std::string& host, std::uint16_t port, const std::string& password = "",
                 const std::string& user = "",
                 std::chrono::milliseconds timeout = std::chrono::seconds(10));
    explicit redis_client(std::uint16_t port) : redis_client("127.0.0.1", port) {}
    ~redis_client();
    redis_client(const redis_client&) = delete;
    redis_client& operator=(const redis_client&) = delete;

    // Sends one command (each argument one bulk string) and returns its reply. Throws on I/O
    // or protocol errors; error replies come back with type error.
    redis_reply command(const std::vector<std::string>& args);

    // Shorthands. get() returns "" for a missing key (use exists() to tell the difference).
    std::string get(const std::string& key);
    bool exists(const std::string& key);
    long long pttl(const std::string& key);  // -2 missing, -1 no expiry
    void set(const std::string& key, const std::string& value);
    // The "role" field of INFO replication, e.g. "master" / "slave".
    std::string role();
    // One "field:value" line of INFO <section>; "" when absent.
    std::string info_field(const std::string& section, const std::string& field);

private:
    redisContext* context_ = nullptr;
};

}  // namespace edgelock::testing
