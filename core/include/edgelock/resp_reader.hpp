// SPDX-License-Identifier: Apache-2.0
// edgelock: RESP2 reply parser, restartable, with hard limits, no allocation.
//
// The caller keeps the bytes it has received in its own buffer and calls parse_reply() over
// all of them. A complete reply comes back as nodes in pre-order (an array node is followed
// by its elements, each followed by its own elements), with string payloads as views into the
// caller's bytes; `consumed` tells how many bytes to drop before parsing the next reply. An
// incomplete reply returns errc::need_more with nothing consumed: the caller appends what
// arrives next and calls again from the same start, as picohttpparser does. Replies are
// bounded (reply_bytes_max), so parsing from the start again costs little, and the parser
// keeps no state between calls.
//
// Limits are checked as soon as the header that breaks them is seen, before the payload
// arrives: a hostile 1 GB bulk header is refused at once, not buffered.
//
// Numbers must be canonical decimal that fits in int64 (no '+', no leading zeros, no "-0"),
// lengths below -1 are refused, as hiredis 0.14.1 does. Stricter than hiredis: a bulk payload
// must be followed by CRLF (hiredis skips any two bytes), and a simple or error line may not
// contain a lone CR or LF. Tests compare both on generated and corrupted input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "edgelock/errc.hpp"

namespace edgelock {

enum class reply_type : std::uint8_t {
    simple_string,  // +OK
    error,          // -ERR ...
    integer,        // :42
    bulk_string,    // $3 foo
    nil,            // $-1 or *-1
    array,          // *N, followed by N elements
};

struct reply_node {
    reply_type type = reply_type::nil;
    std::uint32_t elements = 0;  // arrays: count of direct elements; otherwise 0
    std::int64_t integer = 0;    // integers: the value; otherwise 0
    std::string_view text;       // simple, error and bulk strings: the payload (no CRLF)
};

struct [[nodiscard]] parse_result {
    errc code = errc::need_more;  // ok, need_more, or the reason the bytes are refused
    std::size_t consumed = 0;     // bytes of the complete reply; 0 unless code == ok
    std::size_t nodes = 0;        // nodes written; 0 unless code == ok
};

// Parses the first reply in data[0, size).
//
// Returns, in parse_result::code:
//   ok                 a complete reply: nodes[0, nodes) hold it, `consumed` bytes make it up
//   need_more          the bytes are a valid but incomplete prefix of a reply
//   protocol_error     the bytes are not RESP2 (unknown type byte, bad number, missing CRLF)
//   reply_too_large    a bulk header above bulk_bytes_max, or an incomplete reply already
//                      reply_bytes_max long
//   too_many_elements  an array header above array_elements_max, or more nodes than
//                      nodes_capacity. Lock replies fit nodes_max nodes; a caller that
//                      gives more (Redis Cluster's slot map, session::cluster_reply_nodes_max)
//                      takes arrays of any count its nodes hold.
//   too_deep           arrays nested more than depth_max levels
// After any code other than ok and need_more the stream cannot be resynchronised: the
// caller drops the connection.
parse_result parse_reply(const char* data, std::size_t size, reply_node* nodes,
                         std::size_t nodes_capacity) noexcept;

}  // namespace edgelock
