// SPDX-License-Identifier: Apache-2.0
// edgelock CLI: user input inside one-line messages.
//
// Every message edgelock prints is one line, whatever a flag, a lock name, a URL or a reply
// from Redis holds. Such text goes through quote() or shown(), which write as escapes what a
// terminal or a log reader could take for a line break or a control sequence: the C0 controls
// and DEL (\n, \r, \t, else \xNN), the C1 controls U+0080..U+009F and the separators U+2028
// and U+2029 (each byte as \xNN), and every byte that is not part of well-formed UTF-8
// (\xNN). Other UTF-8 passes as it is, so "zürich" stays readable.
//
// (quote, not quoted: std::quoted would be found for a std::string argument by ADL.)
#pragma once

#include <string>
#include <string_view>

namespace edgelock::cli {

// "text" in double quotes, with the escapes above and \" and \\ inside.
std::string quote(std::string_view text);

// `text` as it is when nothing in it needs an escape, else quote(text): for text usually
// shown bare (a flag, a path, a token, an address).
std::string shown(std::string_view text);

// `text` as a JSON string: in double quotes, with \" \\ and \u00XX for the C0 controls (the
// `--json` outputs of status, list and check).
std::string json_string(std::string_view text);

}  // namespace edgelock::cli
