// SPDX-License-Identifier: Apache-2.0
// Fuzzes the edgelock command line: the input is split at NUL bytes into arguments (the
// first, when it starts with "ENV", fills EDGELOCK_REDIS instead).
// Whatever they hold, parsing returns either options or exit 64 with a message on one line
// without control bytes. (The parser builds without exceptions: anything that would throw
// aborts, and libFuzzer keeps the input.)
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "exit_codes.hpp"
#include "fuzz_check.hpp"
#include "options.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::vector<std::string> args(1);
    for (std::size_t i = 0; i < size; ++i) {
        if (data[i] == 0) {
            args.emplace_back();
        } else {
            args.back() += static_cast<char>(data[i]);
        }
    }
    edgelock::cli::environment env;
    if (!args.empty() && args[0].rfind("ENV", 0) == 0) {
        env.redis = args[0].substr(3);
        args.erase(args.begin());
    }
    const edgelock::cli::parse_result r = edgelock::cli::parse_command_line(args, env);
    if (r.exit_code == 0) return 0;
    EDGELOCK_FUZZ_CHECK(r.exit_code == edgelock::cli::exit_usage,
                        "a parse error other than exit 64");
    EDGELOCK_FUZZ_CHECK(!r.error.empty(), "exit 64 without a message");
    for (const char c : r.error) {
        const auto byte = static_cast<unsigned char>(c);
        EDGELOCK_FUZZ_CHECK(byte >= 0x20 && byte != 0x7f, "a message with a control byte");
    }
    return 0;
}
