"""The shell commands of a Markdown document's ```sh blocks, as a reader
would type them, and the one rewrite a test needs to run them.

Convention (the only one): a command that cannot run in CI ends with a
trailing comment holding `not run in CI: REASON`, e.g.

    tools/bazel run //:train -- --device=cuda   # not run in CI: needs a GPU

(on the last line of a command continued with backslashes; an existing
comment may come first: `# pip install x; not run in CI: needs x`). A reason
that starts with `fails today` marks a known failure: the command still runs
and must fail, so the mark cannot outlive the fix.

`tools/bazel run //pkg:target [-- ARGS]` becomes the same binary taken from
the test's runfiles, started as `bazel run` starts it (see
readme_commands_test.py); `tools/bazel test ...` and `tools/bazel build ...`
are not run (the test is part of the first; its data dependencies are the
second's outputs).
"""

import collections
import re

RUNNABLE_FENCES = ("sh", "bash", "shell")
SKIP_MARK = re.compile(r"#.*\bnot run in CI:\s*(?P<reason>.+?)\s*$")
FAILS_TODAY = "fails today"
_FENCE = re.compile(r"^```\s*(?P<lang>[\w+-]*)")
_HEADING = re.compile(r"^(#{1,6})\s+(?P<title>.+?)\s*#*\s*$")
_BAZEL = re.compile(r"^tools/bazel\s+(?P<verb>\S+)")
_BAZEL_RUN = re.compile(r"^tools/bazel\s+run\s+(?P<label>//\S+)(?:\s+--(?=\s|$))?")
_BAZEL_LABELS = re.compile(r"\s(//\S+)")

# One command: where it is, what the reader types, and why it is not run
# ("" when it is).
Command = collections.namedtuple("Command", "doc line section text skip_reason")


class ReadmeError(Exception):
    """A document or command the test cannot take as written."""


def extract_commands(doc, markdown):
    """Every command of the document's runnable fenced blocks, in order.

    A command is one line, or several joined by trailing backslashes;
    comment-only and blank lines between commands are not commands."""
    commands = []
    section = ""
    fence_lang = None  # None: outside a fence
    pending = []       # the physical lines of a command continued with '\'
    pending_line = 0
    for number, line in enumerate(markdown.splitlines(), start=1):
        fence = _FENCE.match(line)
        if fence_lang is None:
            if fence:
                fence_lang = fence.group("lang").lower()
                continue
            heading = _HEADING.match(line)
            if heading:
                section = heading.group("title")
            continue
        if line.startswith("```"):
            if pending:
                raise ReadmeError("%s:%d: a command ends in '\\' at the end of its block" %
                                  (doc, pending_line))
            fence_lang = None
            continue
        if fence_lang not in RUNNABLE_FENCES:
            continue
        if not pending:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            pending_line = number
        pending.append(line)
        if line.rstrip().endswith("\\"):
            continue
        text = "\n".join(pending)
        pending = []
        mark = SKIP_MARK.search(text.splitlines()[-1])
        commands.append(Command(doc, pending_line, section, text,
                                mark.group("reason") if mark else ""))
    if fence_lang is not None:
        raise ReadmeError("%s: a fenced block is never closed" % doc)
    return commands


def expects_failure(command):
    return command.skip_reason.startswith(FAILS_TODAY)


def bazel_verb(command):
    """'run', 'test', 'build', ... for a `tools/bazel` command, else None."""
    m = _BAZEL.match(command.text.lstrip())
    return m.group("verb") if m else None


def built_labels(command):
    """The labels a `tools/bazel build` command names."""
    return _BAZEL_LABELS.findall(" " + command.text.split("#")[0].replace("\\\n", " "))


def rewrite_bazel_run(command, binaries, launcher, first_args=""):
    """The command with `tools/bazel run //pkg:target [--]` replaced by
    `launcher <the target's binary> [first_args]`; the rest (arguments,
    comment) as written.

    `binaries` maps labels as the documents write them to binary paths."""
    text = command.text.lstrip()
    m = _BAZEL_RUN.match(text)
    if not m:
        raise ReadmeError("%s:%d: cannot read the target of: %s" %
                          (command.doc, command.line, command.text))
    label = m.group("label")
    if label not in binaries:
        raise ReadmeError(
            "%s:%d: %s is not among this test's binaries (add it to data and args in "
            "tests/readme/BUILD)" % (command.doc, command.line, label))
    first = " " + first_args if first_args else ""
    return "%s %s%s%s" % (launcher, shell_quote(binaries[label]), first, text[m.end():])


def shell_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"
