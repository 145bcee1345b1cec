// SPDX-License-Identifier: Apache-2.0
// One exit-code table (tools/edgelock/src/exit_codes.hpp) and three places that print it:
// `edgelock --help` (made from it), docs/CLI.md's "Exit codes" table and the man page's EXIT
// STATUS. Each doc must list the same codes in the same order, each entry beginning with the
// table's words (markup undone, case aside); it may say more after them. The comparison is
// also shown failing on a doc with one word changed, one code missing, and one code too many.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "exit_codes.hpp"
#include "help.hpp"

namespace {

using edgelock::cli::exit_code_meaning;
using edgelock::cli::exit_code_meanings;

using entries = std::vector<std::pair<std::string, std::string>>;  // code, meaning

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// Lower case, one space between words, no space inside brackets.
std::string plain(std::string text) {
    std::string out;
    for (const char c : text) {
        if (std::isspace(static_cast<unsigned char>(c))) {
            if (!out.empty() && out.back() != ' ') out += ' ';
            continue;
        }
        out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
    for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at))
        text.replace(at, from.size(), to), at += to.size();
    return text;
}

// The rows of docs/CLI.md's table under "## Exit codes": "| code | meaning |", backticks and
// the escaped bar undone.
entries markdown_rows(const std::string& markdown) {
    entries rows;
    const std::size_t section = markdown.find("\n## Exit codes\n");
    if (section == std::string::npos) return rows;
    std::istringstream lines(markdown.substr(section + 1));
    std::string line;
    std::getline(lines, line);  // the heading
    while (std::getline(lines, line)) {
        if (line.rfind("## ", 0) == 0) break;
        if (line.rfind("| ", 0) != 0 || line.rfind("| code ", 0) == 0) continue;
        const std::size_t bar = line.find(" | ", 2);
        if (bar == std::string::npos) continue;
        std::string meaning = line.substr(bar + 3);
        if (meaning.size() >= 2) meaning.resize(meaning.size() - 2);  // " |"
        meaning = replace_all(replace_all(meaning, "`", ""), "\\|", "|");
        rows.emplace_back(line.substr(2, bar - 2), meaning);
    }
    return rows;
}

// A roff macro line's arguments, double quotes grouping words.
std::vector<std::string> macro_arguments(const std::string& rest) {
    std::vector<std::string> args;
    std::string arg;
    bool quoted = false;
    bool in_arg = false;
    for (const char c : rest) {
        if (c == '"') {
            quoted = !quoted;
            in_arg = true;
        } else if (c == ' ' && !quoted) {
            if (in_arg) args.push_back(arg);
            arg.clear();
            in_arg = false;
        } else {
            arg += c;
            in_arg = true;
        }
    }
    if (in_arg) args.push_back(arg);
    return args;
}

// A line of a man page as text: font macros (.B, .I: words; .BR, .IR, .RB, ...: joined),
// font escapes and the escapes the pages use undone.
std::string roff_text(const std::string& line) {
    std::string text = line;
    if (!line.empty() && line[0] == '.') {
        const std::size_t space = line.find(' ');
        const std::string macro = line.substr(1, space == std::string::npos ? space : space - 1);
        const std::vector<std::string> args =
            macro_arguments(space == std::string::npos ? "" : line.substr(space + 1));
        const bool alternating = macro.size() == 2;
        text.clear();
        for (const std::string& arg : args) text += (alternating || text.empty() ? "" : " ") + arg;
    }
    for (const char* font : {"\\fI", "\\fB", "\\fR", "\\fP"}) text = replace_all(text, font, "");
    text = replace_all(replace_all(text, "\\-", "-"), "\\&", "");
    text = replace_all(replace_all(text, "\\(aq", "'"), "\\e", "\\");
    return text;
}

// The entries under ".SH EXIT STATUS": ".TP", ".B code", then the text up to the next .TP,
// .PP or .SH.
entries man_rows(const std::string& page) {
    entries rows;
    std::istringstream lines(page);
    std::string line;
    bool in_section = false;
    bool expect_code = false;
    while (std::getline(lines, line)) {
        if (line.rfind(".SH", 0) == 0) {
            in_section = line == ".SH EXIT STATUS" || line == ".SH \"EXIT STATUS\"";
            continue;
        }
        if (!in_section) continue;
        if (line == ".TP") {
            expect_code = true;
        } else if (line.rfind(".PP", 0) == 0) {
            in_section = false;
        } else if (expect_code && line.rfind(".B ", 0) == 0) {
            rows.emplace_back(roff_text(line), "");
            expect_code = false;
        } else if (!rows.empty()) {
            rows.back().second += " " + roff_text(line);
        }
    }
    return rows;
}

// The help's table: "  code     words", continued on lines indented to the words' column.
entries help_rows(const std::string& table) {
    entries rows;
    std::istringstream lines(table);
    std::string line;
    while (std::getline(lines, line)) {
        if (line.rfind("  ", 0) != 0) continue;
        if (line[2] != ' ') {
            const std::size_t words = line.find_first_not_of(' ', line.find(' ', 2));
            rows.emplace_back(line.substr(2, line.find(' ', 2) - 2), line.substr(words));
        } else if (!rows.empty()) {
            rows.back().second += " " + line;
        }
    }
    return rows;
}

// Where `doc` departs from the table: one line per difference, "" when none.
std::string disagreements(const entries& doc) {
    std::string found;
    const std::size_t count = std::size(exit_code_meanings);
    for (std::size_t i = 0; i < std::max(count, doc.size()); ++i) {
        if (i >= doc.size()) {
            found += "missing " + std::string(exit_code_meanings[i].code) + "\n";
            continue;
        }
        if (i >= count) {
            found += "not in the table: " + doc[i].first + "\n";
            continue;
        }
        const exit_code_meaning& row = exit_code_meanings[i];
        if (doc[i].first != row.code) {
            found += "row " + std::to_string(i) + ": " + doc[i].first + " where the table has " +
                     row.code + "\n";
        } else if (plain(doc[i].second).rfind(plain(row.meaning), 0) != 0) {
            found += row.code + std::string(": \"") + plain(doc[i].second) +
                     "\" does not begin with \"" + plain(row.meaning) + "\"\n";
        }
    }
    return found;
}

TEST(ExitCodes, TheHelpPrintsTheTable) {
    const std::string table(edgelock::cli::exit_code_table());
    EXPECT_EQ(disagreements(help_rows(table)), "");
    std::istringstream lines(table);
    std::string line;
    while (std::getline(lines, line)) EXPECT_LE(line.size(), 90u) << line;
}

TEST(ExitCodes, CliMdSaysTheSame) {
    const entries rows = markdown_rows(read_file(EDGELOCK_CLI_DOCS));
    ASSERT_FALSE(rows.empty()) << EDGELOCK_CLI_DOCS << " has no exit-code table";
    EXPECT_EQ(disagreements(rows), "") << EDGELOCK_CLI_DOCS;
}

TEST(ExitCodes, TheManPageSaysTheSame) {
    const entries rows = man_rows(read_file(EDGELOCK_MAN_PAGE));
    ASSERT_FALSE(rows.empty()) << EDGELOCK_MAN_PAGE << " has no EXIT STATUS";
    EXPECT_EQ(disagreements(rows), "") << EDGELOCK_MAN_PAGE;
}

// The comparison can fail: a changed word, a missing code and an extra one are each named.
TEST(ExitCodes, ADocThatDepartsFromTheTableIsNamed) {
    const entries rows = markdown_rows(read_file(EDGELOCK_CLI_DOCS));
    ASSERT_GE(rows.size(), 2u);
    entries changed = rows;
    for (auto& [code, meaning] : changed) {
        if (code == "81") meaning = replace_all(meaning, "beyond --wait", "within --wait");
    }
    EXPECT_NE(disagreements(changed).find("81: "), std::string::npos) << disagreements(changed);
    entries shorter(rows.begin(), rows.end() - 1);
    EXPECT_NE(disagreements(shorter).find("missing 128+N"), std::string::npos);
    entries longer = rows;
    longer.emplace_back("3", "a code the CLI does not have");
    EXPECT_NE(disagreements(longer).find("not in the table: 3"), std::string::npos);
}

}  // namespace
