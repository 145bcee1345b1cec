// Fuzzes parse_redis_url with any text: it either refuses with a one-line reason or returns
// parts that are views into the input, a non-empty host without stray bytes, and a port in
// 1..65535.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "edgelock/redis_url.hpp"
#include "fuzz_check.hpp"

namespace {

bool inside(std::string_view whole, std::string_view part) {
    return part.empty() || (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const edgelock::redis_url_result r = edgelock::parse_redis_url(text);
    if (r.code != edgelock::errc::ok) {
        EDGELOCK_FUZZ_CHECK(r.code == edgelock::errc::invalid_config, "refused with another code");
        EDGELOCK_FUZZ_CHECK(r.problem != nullptr && std::strchr(r.problem, '\n') == nullptr,
                            "a refusal without a one-line reason");
        return 0;
    }
    const edgelock::redis_url& url = r.url;
    EDGELOCK_FUZZ_CHECK(!url.host.empty(), "an accepted address without a host");
    EDGELOCK_FUZZ_CHECK(url.port >= 1, "an accepted port 0");
    EDGELOCK_FUZZ_CHECK(inside(text, url.host) && inside(text, url.user) && inside(text, url.password),
                        "a part outside the input");
    for (const char c : url.host) {
        EDGELOCK_FUZZ_CHECK(c != '/' && c != '@' && c != ' ', "a host with a separator in it");
    }
    return 0;
}
