#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The house checks of scripts/tidy.sh that need more than grep (the format check is there).

    tidy.py ROOT functions|columns|paths...

Prints one line per finding, `path:line: [rule] what`, paths relative to ROOT. Exits 0 when
it could check, findings or none (a crash must not read as a finding), 2 on a bad command
line. The rules:

  function-length  a function in core/ session/ transport/ sim/ tools/ bench/ examples/ whose
                   body is over 70 lines. Counted as clang-tidy's readability-function-size
                   counts them: the closing brace's line minus the opening brace's line (so a
                   body of 69 lines between its braces is 70), lambdas as part of the function
                   that holds them. Found by matching braces outside comments, strings,
                   character literals and preprocessor lines, which is enough for this code
                   and fast; clang-tidy with LineThreshold=70 agrees on the tree.
  columns          a line over 100 columns (code points, tabs to 8) in a C or C++ source,
                   a shell script, a CMake or a Python file.
  paths            a file path that a document (*.md, docs/man/*) or a comment (C and C++
                   `//` and `/* */`; whole-line `#` comments of shell, CMake and Python files)
                   names, and that does not exist. What counts as a path:
                     - a word of [A-Za-z0-9_.+-] and `/` that contains a `/` and ends in a
                       known extension (PATH_SUFFIXES); it exists when it names a file
                       relative to the citing file's directory, a directory above it up to
                       ROOT, an `include/` directory of the tree or a directory directly
                       inside one (`edgelock/session/lock_io.hpp`, `session/lock_io.hpp`);
                     - a bare `NAME.md`; it exists when it names a file in the citing file's
                       directory, a directory above it up to ROOT, or docs/.
                   Not paths: absolute and home paths (`/usr/...`, `/etc/...`, `/tmp/...`,
                   `~/...`; a URL's part after `://` is one), words with a wildcard or a
                   placeholder next to them (`*`, `<`, `{`, `$`, `...`), paths into build
                   trees (`build/`, `build-*/`), and `./name` (the reader's own script in an
                   example command).
  tracked          a file git tracks in ROOT (when ROOT is a git work tree) that is none of
                   the kinds the project keeps (TRACKED_SUFFIXES, TRACKED_NAMES, or under
                   TRACKED_DIRECTORIES): a log, a core dump or an editor's backup committed by
                   mistake.
Files under directories named build* or node_modules (npm's, for bench/peers.sh), or starting
with a dot, are never read.
"""

import os
import re
import subprocess
import sys

FUNCTION_LINES_MAX = 70
FUNCTION_DIRS = ("core", "session", "transport", "sim", "tools", "bench", "examples")
COLUMNS_MAX = 100
TAB_COLUMNS = 8

CXX_SUFFIXES = (".cpp", ".hpp", ".h", ".c")
HASH_COMMENT_SUFFIXES = (".sh", ".cmake", ".py")
PATH_SUFFIXES = (".hpp", ".cpp", ".h", ".c", ".md", ".sh", ".txt", ".cmake", ".py", ".in",
                 ".json", ".service", ".timer", ".env")

# What the repository may hold: sources, build and packaging files, documents, and the few
# files whose kind is their name or their directory.
TRACKED_SUFFIXES = (".cpp", ".hpp", ".h", ".c", ".txt", ".sh", ".cmake", ".py", ".md", ".in",
                    ".map", ".service", ".timer", ".env")
TRACKED_NAMES = ("LICENSE", "Makefile", ".gitignore", ".clang-format", ".ci/run")
TRACKED_DIRECTORIES = ("packaging/", "tests/fuzz/corpus/", "tools/edgelock/completion/",
                       "bench/peers/")  # the peers' clients: a Node.js script, npm's manifests


def walk(root):
    """Every file under root, as a path relative to it, in a stable order."""
    for directory, subdirectories, files in os.walk(root):
        subdirectories[:] = sorted(d for d in subdirectories
                                   if not d.startswith(".") and not d.startswith("build")
                                   and d != "node_modules")
        for name in sorted(files):
            yield os.path.relpath(os.path.join(directory, name), root)


def read_text(root, path):
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as file:
        return file.read()


def is_cxx(path):
    return path.endswith(CXX_SUFFIXES)


def has_hash_comments(path):
    return path.endswith(HASH_COMMENT_SUFFIXES) or os.path.basename(path) == "CMakeLists.txt"


# ---- C and C++: tokens without comments, strings and preprocessor lines -------------------

TOKEN = re.compile(r"""
    (?P<newline>\n)
  | (?P<space>[ \t\r\f\v]+|\\\n)
  | (?P<line_comment>//[^\n]*)
  | (?P<block_comment>/\*.*?(?:\*/|\Z))
  | (?P<raw_string>(?:u8|u|U|L)?R"(?P<delimiter>[^()\\\s"]{0,16})\(.*?\)(?P=delimiter)")
  | (?P<string>(?:u8|u|U|L)?"(?:[^"\\\n]|\\.)*")
  | (?P<char>(?:u8|u|U|L)?'(?:[^'\\\n]|\\.)*')
  | (?P<number>\.?[0-9](?:[eEpP][+-]|'[0-9A-Za-z_]|[0-9A-Za-z_.])*)
  | (?P<word>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<punctuator>::|->|==|!=|<=|>=|.)
""", re.VERBOSE | re.DOTALL)


def cxx_tokens(text):
    """(kind, text, line) for each token; comments are ("comment", text, first line)."""
    line = 1
    at_line_start = True
    position = 0
    while position < len(text):
        if at_line_start:
            directive = re.match(r"[ \t]*#(?:[^\n\\]|\\.|\\\n)*", text[position:], re.DOTALL)
            if directive:
                line += directive.group(0).count("\n")
                position += directive.end()
                continue
        match = TOKEN.match(text, position)
        kind = match.lastgroup
        if kind == "delimiter":
            kind = "raw_string"
        value = match.group(0)
        position = match.end()
        if kind == "newline":
            line += 1
            at_line_start = True
            continue
        if kind == "space":
            line += value.count("\n")
            continue
        at_line_start = False
        if kind in ("line_comment", "block_comment"):
            yield "comment", value, line
        else:
            yield kind, value, line
        line += value.count("\n")


# ---- function-length ----------------------------------------------------------------------

CLASS_KEYS = {"class", "struct", "union", "enum"}
# What may stand between a function's `)` and its body.
BODY_LEADERS = {")", "}", "const", "noexcept", "override", "final", "mutable", "volatile",
                "&", "&&", "try"}


def declaration_start(statement):
    """The index of the statement's first token after any `template <...>` and `[[...]]`."""
    index = 0
    while index < len(statement):
        if statement[index] == "template" and statement[index + 1:index + 2] == ["<"]:
            depth = 0
            index += 1
            while index < len(statement):
                depth += {"<": 1, ">": -1}.get(statement[index], 0)
                index += 1
                if depth == 0:
                    break
        elif statement[index:index + 2] == ["[", "["]:
            while index < len(statement) and statement[index:index + 2] != ["]", "]"]:
                index += 1
            index += 2
        else:
            break
    return index


def top_level(tokens):
    """The tokens outside parentheses and brackets, each group reduced to "(" ")"."""
    depth = 0
    kept = []
    for token in tokens:
        if token in ("(", "["):
            if depth == 0:
                kept.append("(")
            depth += 1
        elif token in (")", "]"):
            depth -= 1
            if depth == 0:
                kept.append(")")
        elif depth == 0:
            kept.append(token)
    return kept


def declares_class(tokens):
    """A class key with no parameter list after it: `struct alignas(8) name : base`."""
    for index, token in enumerate(tokens):
        if token in CLASS_KEYS:
            after = " ".join(tokens[index + 1:]).replace("alignas ( )", "")
            return "(" not in after
    return False


def classify_brace(statement):
    """What a `{` opens at namespace or class scope, given the tokens of the declaration
    before it: "namespace", "class", "function" or "initializer" (any other braces: an
    initializer, or a lambda's body outside a function)."""
    tokens = top_level(statement[declaration_start(statement):])
    if not tokens:
        return "initializer"
    if tokens[0] == "namespace" or tokens[:2] == ["inline", "namespace"]:
        return "namespace"
    if tokens == ["extern", '""']:  # extern "C" {
        return "namespace"
    if declares_class(tokens):
        return "class"
    assigns = any(t == "=" and tokens[i - 1:i] != ["operator"] for i, t in enumerate(tokens))
    if assigns or "(" not in tokens:
        return "initializer"
    if tokens[-1] in BODY_LEADERS:
        return "function"
    if "->" in tokens[tokens.index("("):]:  # a trailing return type
        return "function"
    return "initializer"


def function_name(statement, lines):
    """The function's (possibly qualified) name and the line it is on."""
    angle = 0
    for index in range(declaration_start(statement), len(statement)):
        token = statement[index]
        if token == "operator":  # its name runs to the `(` of its parameters
            after = index + 1 + (statement[index + 1:index + 2] == ["("])  # operator()
            end = statement.index("(", after) if "(" in statement[after:] else after
            first = index
        elif token == "(" and angle <= 0:
            end = first = index
        else:
            angle += {"<": 1, ">": -1}.get(token, 0)
            continue
        if token == "(" and first > 0 and re.fullmatch(r"[A-Za-z_]\w*", statement[first - 1]):
            first -= 1
        while first > 1 and statement[first - 1] == "::" \
                and re.fullmatch(r"[A-Za-z_]\w*", statement[first - 2]):
            first -= 2
        if first > 0 and statement[first - 1] == "~":
            first -= 1
        return "".join(statement[first:end]) or "?", lines[max(first, 0)]
    return "?", lines[-1] if lines else 0


def functions(text):
    """(name, name_line, open_line, close_line) of each function defined in the text."""
    statement, lines = [], []
    nested = None        # the brace being skipped: [kind, depth, open_line, name, name_line]
    for kind, token, line in cxx_tokens(text):
        if kind == "comment":
            continue
        if nested is not None:
            if token == "{":
                nested[1] += 1
            elif token == "}":
                nested[1] -= 1
                if nested[1] == 0:
                    what, _, open_line, name, name_line = nested
                    nested = None
                    if what == "function":
                        yield name, name_line, open_line, line
                        statement, lines = [], []
                    else:
                        statement.append("{}")
                        lines.append(line)
            continue
        if token == "{":
            what = classify_brace(statement)
            if what in ("namespace", "class"):
                statement, lines = [], []
            else:
                name, name_line = function_name(statement, lines)
                nested = [what, 1, line, name, name_line]
        elif token in ("}", ";"):  # a namespace or class closes, a declaration ends
            statement, lines = [], []
        elif token == ":" and statement and statement[-1] in ("public", "private", "protected"):
            statement, lines = [], []
        else:
            statement.append(token if kind not in ("string", "raw_string") else '""')
            lines.append(line)


def check_function_length(root, files):
    findings = []
    for path in files:
        if not is_cxx(path) or path.split(os.sep)[0] not in FUNCTION_DIRS:
            continue
        for name, name_line, open_line, close_line in functions(read_text(root, path)):
            length = close_line - open_line
            if length > FUNCTION_LINES_MAX:
                findings.append(f"{path}:{name_line}: [function-length] {name} is {length} lines"
                                f" (max {FUNCTION_LINES_MAX})")
    return findings


# ---- columns ------------------------------------------------------------------------------

def check_columns(root, files):
    findings = []
    for path in files:
        if not (is_cxx(path) or has_hash_comments(path)):
            continue
        for number, line in enumerate(read_text(root, path).split("\n"), start=1):
            columns = len(line.expandtabs(TAB_COLUMNS))
            if columns > COLUMNS_MAX:
                findings.append(f"{path}:{number}: [columns] {columns} columns"
                                f" (max {COLUMNS_MAX})")
    return findings


# ---- paths --------------------------------------------------------------------------------

PATH_WORD = re.compile(r"(?<![A-Za-z0-9_.+/~$<{*-])[A-Za-z0-9_.+/-]+")
MAN_ESCAPE = re.compile(r"\\f[BIRP]|\\f\(..|\\[-&|^]")


def cited_text(root, path):
    """(line, text) of what the file says in prose: a document's lines, a source's comments."""
    text = read_text(root, path)
    if path.endswith(".md") or path.startswith(os.path.join("docs", "man") + os.sep):
        for number, line in enumerate(text.split("\n"), start=1):
            yield number, MAN_ESCAPE.sub("", line)
    elif is_cxx(path):
        for kind, token, line in cxx_tokens(text):
            if kind == "comment":
                for offset, part in enumerate(token.split("\n")):
                    yield line + offset, part
    elif has_hash_comments(path):
        for number, line in enumerate(text.split("\n"), start=1):
            if re.match(r"\s*#(?!!)", line):
                yield number, line


def path_words(line):
    """The words of a line that count as paths (see the module's comment)."""
    for match in PATH_WORD.finditer(line):
        word = match.group(0).rstrip(".")
        end = match.start() + len(word)
        if line[end:end + 1] in ("*", "<", "{", "$") or "..." in word:
            continue  # part of a pattern or a placeholder
        if word.startswith(("build/", "build-")) or word.startswith("/"):
            continue
        if word.startswith("./") and word.count("/") == 1:
            continue  # the reader's own script in an example command
        if "/" in word:
            if word.endswith(PATH_SUFFIXES):
                yield word
        elif word.endswith(".md") and len(word) > 3:
            yield word


def include_directories(files):
    """Each include/ directory of the tree and each directory directly inside one."""
    found = set()
    for path in files:
        parts = path.split(os.sep)
        if "include" in parts[:-1]:
            at = parts.index("include") + 1
            found.add(os.sep.join(parts[:at]))
            if at < len(parts) - 1:
                found.add(os.sep.join(parts[:at + 1]))
    return sorted(found)


def path_exists(root, citing, word, includes):
    bases = []
    directory = os.path.dirname(citing)
    while True:
        bases.append(directory)
        if not directory:
            break
        directory = os.path.dirname(directory)
    bases += includes if "/" in word else ["docs"]
    return any(os.path.isfile(os.path.join(root, base, word)) for base in bases)


def check_paths(root, files):
    findings = []
    includes = include_directories(files)
    for path in files:
        if not (path.endswith(".md") or is_cxx(path) or has_hash_comments(path)
                or path.startswith(os.path.join("docs", "man") + os.sep)):
            continue
        for number, line in cited_text(root, path):
            for word in path_words(line):
                if not path_exists(root, path, word, includes):
                    findings.append(f"{path}:{number}: [paths] names {word}, which does not"
                                    " exist")
    return findings


# ---- tracked ------------------------------------------------------------------------------

def tracked_files(root):
    """The files git tracks in root, or [] when root is not a git work tree."""
    if not os.path.exists(os.path.join(root, ".git")):
        return []
    listing = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True,
                             check=True).stdout.decode("utf-8", errors="replace")
    return sorted(path for path in listing.split("\0") if path)


def check_tracked(root, _files):
    findings = []
    for path in tracked_files(root):
        known = (path.endswith(TRACKED_SUFFIXES)
                 or path in TRACKED_NAMES or os.path.basename(path) in TRACKED_NAMES
                 or path.startswith(TRACKED_DIRECTORIES))
        if not known:
            findings.append(f"{path}:1: [tracked] not a kind of file the repository keeps"
                            " (remove it, or add its kind to scripts/tidy.py)")
    return findings


CHECKS = {"functions": check_function_length, "columns": check_columns, "paths": check_paths,
          "tracked": check_tracked}


def main(arguments):
    if len(arguments) < 2 or not os.path.isdir(arguments[0]) \
            or any(a not in CHECKS for a in arguments[1:]):
        print(f"usage: tidy.py ROOT {'|'.join(CHECKS)}...", file=sys.stderr)
        return 2
    root = arguments[0]
    files = list(walk(root))
    findings = []
    for check in arguments[1:]:
        findings += CHECKS[check](root, files)
    for finding in findings:
        print(finding)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
