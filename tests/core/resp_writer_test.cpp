// SPDX-License-Identifier: Apache-2.0
#include "edgelock/resp_writer.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "edgelock/errc.hpp"
#include "edgelock/limits.hpp"
#include "edgelock/resp_reader.hpp"

namespace edgelock {
// For GoogleTest and RapidCheck messages.
std::ostream& operator<<(std::ostream& out, errc code) { return out << to_string(code); }
}  // namespace edgelock

namespace {

using edgelock::errc;
using edgelock::resp_writer;

constexpr std::int64_t int64_min = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();

// A command argument: bytes, or an integer the writer turns into decimal bytes.
using argument = std::variant<std::string, std::int64_t>;

std::string argument_bytes(const argument& arg) {
    if (const auto* bytes = std::get_if<std::string>(&arg)) {
        return *bytes;
    }
    return std::to_string(std::get<std::int64_t>(arg));
}

// The RESP encoding of each element of a command, worked out independently of the writer:
// the array header first, then one bulk string per argument.
std::vector<std::string> expected_elements(const std::vector<argument>& args) {
    std::vector<std::string> elements{"*" + std::to_string(args.size()) + "\r\n"};
    for (const argument& arg : args) {
        const std::string bytes = argument_bytes(arg);
        elements.push_back("$" + std::to_string(bytes.size()) + "\r\n" + bytes + "\r\n");
    }
    return elements;
}

void write_command(resp_writer& writer, const std::vector<argument>& args) {
    writer.array(args.size());
    for (const argument& arg : args) {
        if (const auto* bytes = std::get_if<std::string>(&arg)) {
            writer.bulk(std::string_view(*bytes));
        } else {
            writer.bulk(std::get<std::int64_t>(arg));
        }
    }
}

std::string written(const std::vector<char>& buffer, const resp_writer& writer) {
    return std::string(buffer.data(), writer.size());
}

rc::Gen<argument> argument_gen() {
    return rc::gen::oneOf(rc::gen::cast<argument>(rc::gen::container<std::string>(rc::gen::oneOf(
                              rc::gen::element('\r', '\n', '\0'), rc::gen::arbitrary<char>()))),
                          rc::gen::cast<argument>(rc::gen::oneOf(
                              rc::gen::arbitrary<std::int64_t>(),
                              rc::gen::element(int64_min, int64_max, std::int64_t{0}))));
}

TEST(resp_writer, encodes_a_command_as_an_array_of_bulk_strings) {
    std::vector<char> buffer(256);
    resp_writer writer(buffer.data(), buffer.size());
    writer.array(6);
    writer.bulk("SET");
    writer.bulk("lock:a");
    writer.bulk("00112233445566778899aabbccddeeff");
    writer.bulk("NX");
    writer.bulk("PX");
    writer.bulk(std::int64_t{30000});
    EXPECT_EQ(writer.status(), errc::ok);
    EXPECT_EQ(written(buffer, writer),
              "*6\r\n$3\r\nSET\r\n$6\r\nlock:a\r\n$32\r\n00112233445566778899aabbccddeeff\r\n"
              "$2\r\nNX\r\n$2\r\nPX\r\n$5\r\n30000\r\n");
}

TEST(resp_writer, writes_integers_as_bulk_decimal_strings_including_the_extremes) {
    std::vector<char> buffer(256);
    resp_writer writer(buffer.data(), buffer.size());
    writer.bulk(int64_min);
    writer.bulk(int64_max);
    writer.bulk(std::int64_t{0});
    writer.bulk(std::int64_t{-1});
    EXPECT_EQ(writer.status(), errc::ok);
    EXPECT_EQ(written(buffer, writer),
              "$20\r\n-9223372036854775808\r\n$19\r\n9223372036854775807\r\n"
              "$1\r\n0\r\n$2\r\n-1\r\n");
}

TEST(resp_writer, writes_an_empty_bulk_string_and_an_empty_array) {
    std::vector<char> buffer(16);
    resp_writer writer(buffer.data(), buffer.size());
    writer.bulk(std::string_view());
    writer.array(0);
    EXPECT_EQ(writer.status(), errc::ok);
    EXPECT_EQ(written(buffer, writer), "$0\r\n\r\n*0\r\n");
}

TEST(resp_writer, copies_binary_bytes_unchanged) {
    const std::string bytes("a\0\r\n\xff$*", 7);
    std::vector<char> buffer(32);
    resp_writer writer(buffer.data(), buffer.size());
    writer.bulk(std::string_view(bytes));
    EXPECT_EQ(writer.status(), errc::ok);
    EXPECT_EQ(written(buffer, writer), "$7\r\n" + bytes + "\r\n");
}

class resp_writer_capacity : public ::testing::Test {
protected:
    const std::vector<argument> command{std::string("EVALSHA"), std::string("0123abcd"),
                                        std::int64_t{1}, std::string("lock:a"),
                                        std::int64_t{30000}};
    const std::vector<std::string> elements = expected_elements(command);

    std::size_t full_size() const {
        std::size_t size = 0;
        for (const std::string& element : elements) {
            size += element.size();
        }
        return size;
    }
};

TEST_F(resp_writer_capacity, an_exact_fit_succeeds) {
    std::vector<char> buffer(full_size());
    resp_writer writer(buffer.data(), buffer.size());
    write_command(writer, command);
    EXPECT_EQ(writer.status(), errc::ok);
    EXPECT_EQ(writer.size(), full_size());
}

TEST_F(resp_writer_capacity, one_byte_less_fails_and_keeps_the_bytes_before_the_failed_write) {
    const std::size_t capacity = full_size() - 1;
    std::vector<char> buffer(capacity + 8, '#');
    resp_writer writer(buffer.data(), capacity);
    write_command(writer, command);
    EXPECT_EQ(writer.status(), errc::buffer_too_small);
    EXPECT_EQ(writer.size(), full_size() - elements.back().size());
    EXPECT_EQ(std::string(buffer.data() + capacity, 8), std::string(8, '#'));
}

TEST(resp_writer, buffer_too_small_is_sticky_even_for_writes_that_would_fit) {
    std::vector<char> buffer(8);
    resp_writer writer(buffer.data(), buffer.size());
    writer.array(1);
    writer.bulk("too long for the rest");
    EXPECT_EQ(writer.status(), errc::buffer_too_small);
    EXPECT_EQ(writer.size(), 4u);
    writer.array(0);
    writer.bulk("");
    EXPECT_EQ(writer.status(), errc::buffer_too_small);
    EXPECT_EQ(writer.size(), 4u);
    EXPECT_EQ(written(buffer, writer), "*1\r\n");
}

TEST(resp_writer, a_zero_capacity_writer_refuses_everything) {
    resp_writer writer(nullptr, 0);
    EXPECT_EQ(writer.status(), errc::ok);
    writer.array(0);
    EXPECT_EQ(writer.status(), errc::buffer_too_small);
    EXPECT_EQ(writer.size(), 0u);
}

RC_GTEST_PROP(resp_writer, keeps_whole_elements_within_any_capacity, ()) {
    const auto args =
        *rc::gen::resize(20, rc::gen::container<std::vector<argument>>(argument_gen()));
    const std::vector<std::string> elements = expected_elements(args);
    std::string full;
    for (const std::string& element : elements) {
        full += element;
    }
    const auto capacity = *rc::gen::inRange<std::size_t>(0, full.size() + 1);

    constexpr std::size_t guard_bytes = 16;
    std::vector<char> buffer(capacity + guard_bytes, '#');
    resp_writer writer(buffer.data(), capacity);
    write_command(writer, args);

    // The elements that fit, in order, up to the first that does not.
    std::size_t fitting = 0;
    for (const std::string& element : elements) {
        if (fitting + element.size() > capacity) {
            break;
        }
        fitting += element.size();
    }
    RC_ASSERT(writer.status() == (capacity >= full.size() ? errc::ok : errc::buffer_too_small));
    RC_ASSERT(writer.size() == fitting);
    RC_ASSERT(written(buffer, writer) == full.substr(0, fitting));
    RC_ASSERT(std::string(buffer.data() + capacity, guard_bytes) == std::string(guard_bytes, '#'));
}

RC_GTEST_PROP(resp_writer, commands_round_trip_through_parse_reply, ()) {
    const auto args =
        *rc::gen::resize(40, rc::gen::container<std::vector<argument>>(argument_gen()));
    RC_PRE(args.size() <= edgelock::array_elements_max);

    std::vector<char> buffer(edgelock::reply_bytes_max);
    resp_writer writer(buffer.data(), buffer.size());
    write_command(writer, args);
    RC_ASSERT(writer.status() == errc::ok);

    std::vector<edgelock::reply_node> nodes(edgelock::nodes_max);
    const edgelock::parse_result result =
        edgelock::parse_reply(buffer.data(), writer.size(), nodes.data(), nodes.size());
    RC_ASSERT(result.code == errc::ok);
    RC_ASSERT(result.consumed == writer.size());
    RC_ASSERT(result.nodes == args.size() + 1);
    RC_ASSERT(nodes[0].type == edgelock::reply_type::array);
    RC_ASSERT(nodes[0].elements == args.size());
    for (std::size_t i = 0; i < args.size(); ++i) {
        RC_ASSERT(nodes[i + 1].type == edgelock::reply_type::bulk_string);
        RC_ASSERT(std::string(nodes[i + 1].text) == argument_bytes(args[i]));
    }
}

}  // namespace
