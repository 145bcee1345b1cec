// SPDX-License-Identifier: Apache-2.0
// User input inside one-line messages: quote() and shown() of quote.hpp.
#include <gtest/gtest.h>

#include <string>

#include "quote.hpp"

namespace {

using edgelock::cli::json_string;
using edgelock::cli::quote;
using edgelock::cli::shown;

TEST(Quote, EscapesWhatBreaksALineAndTheQuotesOwnBytes) {
    EXPECT_EQ(quote(""), "\"\"");
    EXPECT_EQ(quote("orders:42"), "\"orders:42\"");
    EXPECT_EQ(quote("a\nb\rc\td"), "\"a\\nb\\rc\\td\"");
    EXPECT_EQ(quote(std::string("a\0b", 3)), "\"a\\x00b\"");
    EXPECT_EQ(quote("\x1b[2J\x7f"), "\"\\x1b[2J\\x7f\"");
    EXPECT_EQ(quote("say \"hi\" \\o/"), "\"say \\\"hi\\\" \\\\o/\"");
}

TEST(Quote, KeepsUtf8AndEscapesEveryOtherByte) {
    EXPECT_EQ(quote("z\xc3\xbcrich \xe2\x82\xac \xf0\x9f\x94\x92"),
              "\"z\xc3\xbcrich \xe2\x82\xac \xf0\x9f\x94\x92\"");
    EXPECT_EQ(quote("\xc2\x85"), "\"\\xc2\\x85\"");  // NEL, a C1 control
    EXPECT_EQ(quote("\xc2\xa0"), "\"\xc2\xa0\"");    // no-break space is text
    EXPECT_EQ(quote("\xe2\x80\xa8\xe2\x80\xa9"),
              "\"\\xe2\\x80\\xa8\\xe2\\x80\\xa9\"");                   // U+2028, U+2029
    EXPECT_EQ(quote("\xc0\x8a"), "\"\\xc0\\x8a\"");                    // overlong newline
    EXPECT_EQ(quote("\xe0\x80\x8a"), "\"\\xe0\\x80\\x8a\"");           // overlong, 3 bytes
    EXPECT_EQ(quote("\xed\xa0\x80"), "\"\\xed\\xa0\\x80\"");           // a surrogate
    EXPECT_EQ(quote("\xf4\x90\x80\x80"), "\"\\xf4\\x90\\x80\\x80\"");  // above U+10FFFF
    EXPECT_EQ(quote("ab\xe2\x82"), "\"ab\\xe2\\x82\"");                // cut short at the end
    EXPECT_EQ(quote("\xff"), "\"\\xff\"");
}

TEST(Shown, BareUnlessSomethingNeedsAnEscape) {
    EXPECT_EQ(shown("/usr/local/bin/backup.sh"), "/usr/local/bin/backup.sh");
    EXPECT_EQ(shown("a b \"c\" \\"), "a b \"c\" \\");
    EXPECT_EQ(shown("z\xc3\xbcrich"), "z\xc3\xbcrich");
    EXPECT_EQ(shown("--bo\ngus"), "\"--bo\\ngus\"");
    EXPECT_EQ(shown("a\xff"), "\"a\\xff\"");
}

// --json output: quotes and backslashes escaped, control characters as \u00XX, not dropped.
TEST(JsonString, EscapesWhatJsonNeedsAndKeepsEveryCharacter) {
    EXPECT_EQ(json_string("plain"), "\"plain\"");
    EXPECT_EQ(json_string("a\"b\\c"), "\"a\\\"b\\\\c\"");
    EXPECT_EQ(json_string("a\nb\x01"), "\"a\\u000ab\\u0001\"");
    EXPECT_EQ(json_string("z\xc3\xbcrich"), "\"z\xc3\xbcrich\"");
}

}  // namespace
