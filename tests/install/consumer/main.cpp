// SPDX-License-Identifier: Apache-2.0
// Uses the installed edgelock: headers from the package, code from libedgelock_core.a.
// Returns non-zero when anything differs from what the library must produce.
#include <edgelock/errc.hpp>
#include <edgelock/limits.hpp>
#include <edgelock/resp_writer.hpp>

#include <cstdint>
#include <cstdio>
#include <string_view>

namespace {

int failures = 0;

void expect_equal(std::string_view what, std::string_view actual, std::string_view expected) {
    if (actual != expected) {
        std::printf("FAIL %.*s: got \"%.*s\", want \"%.*s\"\n", static_cast<int>(what.size()),
                    what.data(), static_cast<int>(actual.size()), actual.data(),
                    static_cast<int>(expected.size()), expected.data());
        ++failures;
    }
}

// The package must not force the core's -fno-exceptions onto its users.
bool user_code_keeps_exceptions() {
    try {
        throw 1;
    } catch (int) {
        return true;
    }
}

}  // namespace

int main() {
    expect_equal("to_string(errc::busy)", edgelock::to_string(edgelock::errc::busy), "busy");
    expect_equal("to_string(errc::ok)", edgelock::to_string(edgelock::errc::ok), "ok");

    char buffer[edgelock::request_bytes_max];
    edgelock::resp_writer writer(buffer, sizeof buffer);
    writer.array(6);
    writer.bulk("SET");
    writer.bulk("orders:42");
    writer.bulk("00112233445566778899aabbccddeeff");
    writer.bulk("NX");
    writer.bulk("PX");
    writer.bulk(std::int64_t{30000});
    expect_equal("writer.status()", edgelock::to_string(writer.status()), "ok");
    expect_equal("SET command", std::string_view(buffer, writer.size()),
                 "*6\r\n$3\r\nSET\r\n$9\r\norders:42\r\n"
                 "$32\r\n00112233445566778899aabbccddeeff\r\n"
                 "$2\r\nNX\r\n$2\r\nPX\r\n$5\r\n30000\r\n");

    char tiny[4];
    edgelock::resp_writer small(tiny, sizeof tiny);
    small.array(1);
    small.bulk("PING");
    expect_equal("overflow status", edgelock::to_string(small.status()), "buffer_too_small");

    if (!user_code_keeps_exceptions()) {
        std::printf("FAIL exceptions in user code\n");
        ++failures;
    }

    std::printf("consumer: %s\n", failures == 0 ? "ok" : "FAILED");
    return failures == 0 ? 0 : 1;
}
