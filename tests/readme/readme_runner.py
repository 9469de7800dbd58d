"""Runs documents' commands (readme_commands.py) as a reader would, shard by
shard; readme_commands_test.py says which documents and how they are cut.

Each shard gets a HOME and a working directory of its own, both fresh
temporary folders (so `~`, `$HOME`, `$PWD` and relative paths mean what they
mean to a reader, and the cache is `~/.cache/mantissa` under that HOME), and
runs its sections' commands in document order, each by `bash -c`, sharing
what earlier ones made. A command passes when it exits 0 and prints no
`mantissa: error` (or `<tool>: error:`) line on stderr; one marked
`fails today` must fail. Every command not run is printed with its reason,
and a shard that runs no passing command fails.

`tools/bazel run //pkg:target -- ARGS` runs the target's binary from this
test's runfiles as `bazel run` starts it: in its runfiles tree, with
BUILD_WORKING_DIRECTORY naming the reader's directory. The working directory
also holds a `bazel-bin` tree of the same binaries, each beside its
`.runfiles` (what `tools/bazel build` leaves in a clone), and the files a
reader brings. mpirun gets what a sandboxed test needs
(tests/integration/mpi_launch.h says why) and, as root, the variables that
stand in for `--allow-run-as-root`.
"""

import argparse
import collections
import os
import resource
import shutil
import subprocess
import tempfile
import time

from tests.readme import readme_commands as rc

# docs: document paths under the docs root; plan: per shard, the
# (document, section heading) pairs it runs, in document order; files:
# {name in the working directory: file to copy}; shortened: {a command's
# first line as written: arguments its binary gets before the command's
# own} (for `tools/bazel run` commands whose full length adds nothing a
# shorter run does not check; the command's own arguments still win).
Setup = collections.namedtuple("Setup", "docs plan files shortened", defaults=[{}])

COMMAND_TIMEOUT_S = 300
LAUNCHER = "__bazel_run"
PREAMBLE = """%s() {
  local binary="$1"; shift
  ( export BUILD_WORKING_DIRECTORY="$PWD" BUILD_WORKSPACE_DIRECTORY="$READMETEST_WORKSPACE"
    cd "$READMETEST_WORKSPACE" && exec "$binary" "$@" )
}
""" % LAUNCHER


def load_commands(docs_root, docs):
    commands = []
    for doc in docs:
        with open(os.path.join(docs_root, doc), encoding="utf-8") as f:
            commands += rc.extract_commands(doc, f.read())
    return commands


def check_plan(commands, plan):
    """What is wrong with `plan` for these commands ([] when nothing)."""
    problems = []
    with_commands = []
    for c in commands:
        if (c.doc, c.section) not in with_commands:
            with_commands.append((c.doc, c.section))
    planned = [s for shard in plan for s in shard]
    for s in with_commands:
        if planned.count(s) != 1:
            problems.append('%s section "%s" holds commands but is in %d shards of PLAN '
                            "(tests/readme/readme_commands_test.py)" %
                            (s[0], s[1], planned.count(s)))
    for s in planned:
        if s not in with_commands:
            problems.append('PLAN names %s section "%s", which holds no commands (renamed?); '
                            "the sections with commands: %s" % (s[0], s[1], with_commands))
    for shard in plan:
        order = [with_commands.index(s) for s in shard if s in with_commands]
        if order != sorted(order):
            problems.append("PLAN's shard %s is not in document order" % shard)
    return problems


def make_reader_world(root, binaries, workspace, files):
    """(HOME, working directory, environment, private tmp) of a reader."""
    home = os.path.join(root, "home")
    work = os.path.join(root, "work")
    os.makedirs(home)
    os.makedirs(work)
    for name, source in files.items():
        shutil.copyfile(source, os.path.join(work, name))
    runfiles = os.path.dirname(workspace)
    for path in sorted(set(binaries.values())):
        link = os.path.join(work, "bazel-bin", os.path.relpath(path, workspace))
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(path, link)
        os.symlink(runfiles, link + ".runfiles")
    # Short and under /tmp: PMIx's socket paths must fit in 108 bytes.
    tmp = tempfile.mkdtemp(prefix="mnt-readme.", dir="/tmp")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "LANG": "C.UTF-8",
        "TMPDIR": tmp,
        "READMETEST_WORKSPACE": workspace,
        # Concurrent sandboxed tests' mpirun share a pid, hence a job id.
        "OMPI_MCA_btl_vader_backing_directory": tmp,
        "OMPI_MCA_btl": "self,vader",
    }
    if "OMP_WAIT_POLICY" in os.environ:  # .bazelrc: tests share the cores
        env["OMP_WAIT_POLICY"] = os.environ["OMP_WAIT_POLICY"]
    if os.geteuid() == 0:
        env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
        env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    return home, work, env, tmp


def error_lines(stderr):
    """`mantissa: error...` and `<tool>: error: ...` lines."""
    return [l for l in stderr.splitlines()
            if l.startswith("mantissa: error") or
            (": error:" in l and " " not in l.split(": error:")[0])]


def _tail(text, n=40):
    return "\n".join("      " + l for l in text.rstrip().splitlines()[-n:])


def _children_cpu_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _run(text, work, env):
    """(exit code or 'timeout ...', stdout, stderr, "N s (M s CPU)")."""
    start, cpu = time.monotonic(), _children_cpu_s()
    try:
        p = subprocess.run(["bash", "-c", PREAMBLE + text], cwd=work, env=env,
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=COMMAND_TIMEOUT_S)
        code, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        code, out, err = "timeout after %d s" % COMMAND_TIMEOUT_S, e.stdout or b"", e.stderr or b""
    return (code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"),
            "%.1f s (%.1f s CPU)" % (time.monotonic() - start, _children_cpu_s() - cpu))


def _not_run_reason(c, verb, binaries):
    """Why `c` is not run, "" when it is; raises ReadmeError when it cannot be."""
    if c.skip_reason and not rc.expects_failure(c):
        return "not run in CI: " + c.skip_reason
    if verb == "test":
        return "a Bazel test run: this test is part of it"
    if verb == "build":
        missing = [l for l in rc.built_labels(c) if l not in binaries]
        if missing:
            raise rc.ReadmeError("builds %s, which this test does not carry "
                                 "(tests/readme/BUILD)" % ", ".join(missing))
        return "a Bazel build: this test's data dependencies are what it builds"
    if verb not in (None, "run"):
        raise rc.ReadmeError("tools/bazel %s cannot run in a test: mark it" % verb)
    return ""


def run_shard(index, setup, commands, binaries, workspace, scratch, logs_dir):
    """Runs shard `index` of setup.plan; returns its number of failures."""
    sections = setup.plan[index]
    mine = [c for c in commands if (c.doc, c.section) in sections]
    print("shard %d of %d: %s" % (index + 1, len(setup.plan),
                                  "; ".join('%s "%s"' % s for s in sections)))
    home, work, env, tmp = make_reader_world(scratch, binaries, workspace, setup.files)
    print("HOME=%s\nworking directory=%s\n" % (home, work))
    failures, not_run, ran, as_marked = [], [], 0, 0
    try:
        for n, c in enumerate(mine):
            where = "%s:%d" % (c.doc, c.line)
            verb = rc.bazel_verb(c)
            try:
                reason = _not_run_reason(c, verb, binaries)
                extra = setup.shortened.get(c.text.lstrip().split("\n")[0], "")
                text = (rc.rewrite_bazel_run(c, binaries, LAUNCHER, extra) if verb == "run"
                        else c.text)
            except rc.ReadmeError as e:
                failures.append(where)
                print("FAIL %s  %s\n      %s" % (where, c.text, e))
                continue
            if reason:
                not_run.append("%s  %s\n      %s" % (where, c.text, reason))
                continue
            print("RUN  %s  %s" % (where, c.text), flush=True)
            if extra:
                print("     shortened in CI: %s before the command's own arguments" % extra)
            code, out, err, took = _run(text, work, env)
            ran += 1
            if logs_dir:
                with open(os.path.join(logs_dir, "shard%d_%02d.log" % (index + 1, n)), "w") as f:
                    f.write("%s\n%s\n--- exit %s\n--- stdout\n%s--- stderr\n%s" %
                            (where, c.text, code, out, err))
            errors = error_lines(err)
            ok = code == 0 and not errors
            if rc.expects_failure(c):
                if ok:
                    failures.append(where)
                    print("FAIL passes now (%s) but is marked '# not run in CI: %s': "
                          "remove the mark" % (took, c.skip_reason))
                else:
                    as_marked += 1
                    print("     failed as marked (%s), %s: exit %s%s" % (
                        c.skip_reason, took, code, "; " + errors[0] if errors else ""))
            elif ok:
                print("     ok, %s" % took)
            else:
                failures.append(where)
                print("FAIL %s: exit %s%s\n    stdout (tail):\n%s\n    stderr (tail):\n%s" % (
                    took, code, ", an error line on stderr" if errors else "",
                    _tail(out), _tail(err)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print()
    for line in not_run:
        print("NOT RUN " + line)
    print("\nshard %d: %d commands run (%d failing as marked), %d not run, %d failed%s" % (
        index + 1, ran, as_marked, len(not_run), len(failures),
        (": " + ", ".join(failures)) if failures else ""))
    if ran == as_marked:
        print("FAIL: this shard ran no command that must pass: it tests nothing")
        return len(failures) + 1
    return len(failures)


def main(argv, setup):
    p = argparse.ArgumentParser()
    p.add_argument("--docs_root", required=True)
    p.add_argument("--binary", action="append", default=[], help="LABEL=PATH")
    p.add_argument("--shard", type=int, default=None,
                   help="0-based; default $TEST_SHARD_INDEX, else every shard in turn")
    args = p.parse_args(argv)
    workspace = os.path.abspath(args.docs_root)
    binaries = {}
    for b in args.binary:
        label, _, path = b.partition("=")
        binaries[label] = os.path.abspath(path)
    try:
        commands = load_commands(workspace, setup.docs)
    except rc.ReadmeError as e:
        print("FAIL: %s" % e)
        return 1
    problems = check_plan(commands, setup.plan)
    first_lines = [c.text.lstrip().split("\n")[0] for c in commands]
    for line in setup.shortened:
        if first_lines.count(line) != 1:
            problems.append("the shortened command %r is in the documents %d times, not once "
                            "(edited? tests/readme/readme_commands_test.py)" %
                            (line, first_lines.count(line)))
    if not commands:
        problems.append("no commands in %s" % ", ".join(setup.docs))
    total = os.environ.get("TEST_TOTAL_SHARDS")
    if total is not None and int(total) != len(setup.plan):
        problems.append("shard_count is %s, PLAN has %d shards" % (total, len(setup.plan)))
    if problems:
        print("\n".join("FAIL: " + p for p in problems))
        return 1
    if os.environ.get("TEST_SHARD_STATUS_FILE"):
        open(os.environ["TEST_SHARD_STATUS_FILE"], "w").close()
    if args.shard is not None:
        shards = [args.shard]
    elif total is not None:
        shards = [int(os.environ["TEST_SHARD_INDEX"])]
    else:
        shards = range(len(setup.plan))
    scratch = tempfile.mkdtemp(prefix="readme.", dir=os.environ.get("TEST_TMPDIR"))
    failed = 0
    for index in shards:
        failed += run_shard(index, setup, commands, binaries, workspace,
                            os.path.join(scratch, "shard%d" % (index + 1)),
                            os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR"))
    return 1 if failed else 0
