"""readme_commands (extraction, marks, the `bazel run` rewrite) and
readme_runner (pass, fail, marks, the reader's world) on small documents."""

import contextlib
import io
import os
import stat
import tempfile
import unittest

from tests.readme import readme_commands as rc
from tests.readme import readme_runner

DOC = """# Title

text with `tools/bazel run //not:a_command`

```sh
tools/bazel run //:train      # main job
tools/bazel run //:train -- --steps=3 \\
    --seed=2 # not run in CI: needs a GPU
# a comment line

tools/bazel test //...
```

    indented output, not a command

## Second

```python
print("not sh")
```

```sh
tensorboard --logdir=x   # pip install tensorboard; not run in CI: needs it
sample --checkpoint=~/x  # not run in CI: fails today: ~ not expanded (issue #41)
```
"""


class ExtractTest(unittest.TestCase):

    def test_commands_sections_marks(self):
        cs = rc.extract_commands("D.md", DOC)
        self.assertEqual([(c.line, c.section) for c in cs],
                         [(6, "Title"), (7, "Title"), (11, "Title"), (23, "Second"), (24, "Second")])
        self.assertEqual(cs[1].text, "tools/bazel run //:train -- --steps=3 \\\n    --seed=2 # not run in CI: needs a GPU")
        self.assertEqual([c.skip_reason for c in cs],
                         ["", "needs a GPU", "", "needs it", "fails today: ~ not expanded (issue #41)"])
        self.assertEqual([rc.expects_failure(c) for c in cs], [False, False, False, False, True])
        self.assertEqual([rc.bazel_verb(c) for c in cs], ["run", "run", "test", None, None])

    def test_rewrite(self):
        cs = rc.extract_commands("D.md", DOC)
        binaries = {"//:train": "/b/train"}
        self.assertEqual(rc.rewrite_bazel_run(cs[0], binaries, "L"), "L '/b/train'      # main job")
        self.assertEqual(rc.rewrite_bazel_run(cs[1], binaries, "L"),
                         "L '/b/train' --steps=3 \\\n    --seed=2 # not run in CI: needs a GPU")
        with self.assertRaisesRegex(rc.ReadmeError, "//:train is not among"):
            rc.rewrite_bazel_run(cs[0], {}, "L")

    def test_built_labels(self):
        c = rc.Command("D", 1, "S", "tools/bazel build //a:b \\\n  //c:d   # //e:f", "")
        self.assertEqual(rc.built_labels(c), ["//a:b", "//c:d"])

    def test_malformed(self):
        with self.assertRaisesRegex(rc.ReadmeError, "never closed"):
            rc.extract_commands("D.md", "```sh\ntrue\n")
        with self.assertRaisesRegex(rc.ReadmeError, "ends in"):
            rc.extract_commands("D.md", "```sh\ntrue \\\n```\n")


class RunnerTest(unittest.TestCase):
    """The runner on a document of its own: what passes, what fails."""

    def run_doc(self, markdown, tools=None, shortened=None):
        """Runs D.md's section S; `tools`: {label: shell script} in the workspace."""
        root = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        with open(os.path.join(root, "D.md"), "w") as f:
            f.write(markdown)
        binaries = {}
        for label, script in (tools or {}).items():
            binaries[label] = os.path.join(root, label.split(":")[-1])
            with open(binaries[label], "w") as f:
                f.write(script)
            os.chmod(binaries[label], stat.S_IRWXU)
        commands = readme_runner.load_commands(root, ["D.md"])
        setup = readme_runner.Setup(docs=["D.md"], plan=[[("D.md", "S")]], files={},
                                    shortened=shortened or {})
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            failures = readme_runner.run_shard(0, setup, commands, binaries, root,
                                               os.path.join(root, "scratch"), None)
        return failures, out.getvalue()

    def test_passing_commands(self):
        failures, out = self.run_doc(
            "# S\n```sh\ntouch ~/made && test -f $HOME/made && touch here\n"
            "test -f here && test \"$HOME\" != \"$PWD\"\n"
            "false  # not run in CI: fails today: shows the mark\n"
            "false  # not run in CI: never run\n"
            "tools/bazel test //...\n```\n")
        self.assertEqual(failures, 0, out)
        self.assertIn("NOT RUN D.md:6  false  # not run in CI: never run\n      not run in CI: never run", out)
        self.assertIn("3 commands run (1 failing as marked), 2 not run, 0 failed", out)

    def test_unmarked_failure_fails(self):
        failures, out = self.run_doc("# S\n```sh\ntrue\nfalse\ntrue\n```\n")
        self.assertEqual(failures, 1, out)
        self.assertIn("FAIL", out)

    def test_error_line_fails(self):
        failures, out = self.run_doc("# S\n```sh\necho 'mantissa: error: x' >&2\n```\n")
        self.assertEqual(failures, 1, out)
        failures, out = self.run_doc("# S\n```sh\ntrue\necho 'sample: error: x' >&2\n```\n")
        self.assertEqual(failures, 1, out)

    def test_stale_fails_today_mark_fails(self):
        failures, out = self.run_doc("# S\n```sh\ntrue\ntrue  # not run in CI: fails today: x\n```\n")
        self.assertEqual(failures, 1, out)
        self.assertIn("remove the mark", out)

    def test_running_nothing_fails(self):
        failures, out = self.run_doc("# S\n```sh\ntrue  # not run in CI: reason\n```\n")
        self.assertEqual(failures, 1, out)
        self.assertIn("it tests nothing", out)

    def test_bazel_run_starts_in_runfiles_with_the_readers_directory(self):
        failures, out = self.run_doc(
            "# S\n```sh\ntools/bazel run //t:tool -- ~/x\n"
            "grep -qx \"$READMETEST_WORKSPACE $HOME/x\" seen || { cat seen; false; }\n"
            "bazel-bin/tool y && grep -qx \"$PWD y\" seen\n```\n",
            tools={"//t:tool": "#!/bin/sh\necho \"$PWD $1\" > \"${BUILD_WORKING_DIRECTORY:-.}/seen\"\n"})
        self.assertEqual(failures, 0, out)

    def test_a_shortened_command_gets_its_arguments_first(self):
        failures, out = self.run_doc(
            "# S\n```sh\ntools/bazel run //t:tool -- --own  # why\n"
            "grep -qx -- '--steps=2 --own' seen || { cat seen; false; }\n```\n",
            tools={"//t:tool": "#!/bin/sh\necho \"$*\" > \"$BUILD_WORKING_DIRECTORY/seen\"\n"},
            shortened={"tools/bazel run //t:tool -- --own  # why": "--steps=2"})
        self.assertEqual(failures, 0, out)
        self.assertIn("shortened in CI: --steps=2", out)

    def test_a_shortened_command_no_document_has_fails(self):
        root = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        with open(os.path.join(root, "D.md"), "w") as f:
            f.write("# S\n```sh\ntrue\n```\n")
        setup = readme_runner.Setup(docs=["D.md"], plan=[[("D.md", "S")]], files={},
                                    shortened={"tools/bazel run //:gone": "--steps=2"})
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = readme_runner.main(["--docs_root=" + root, "--shard=0"], setup)
        self.assertEqual(status, 1, out.getvalue())
        self.assertIn("is in the documents 0 times", out.getvalue())

    def test_unknown_target_fails(self):
        failures, out = self.run_doc("# S\n```sh\ntrue\ntools/bazel run //no:such\n```\n")
        self.assertEqual(failures, 1, out)
        self.assertIn("not among this test's binaries", out)

    def test_plan_must_cover_every_section(self):
        cs = rc.extract_commands("D.md", "# A\n```sh\ntrue\n```\n# B\n```sh\ntrue\n```\n")
        self.assertEqual(readme_runner.check_plan(cs, [[("D.md", "A"), ("D.md", "B")]]), [])
        self.assertIn('D.md section "B" holds commands but is in 0 shards',
                      readme_runner.check_plan(cs, [[("D.md", "A")]])[0])
        self.assertIn("not in document order",
                      readme_runner.check_plan(cs, [[("D.md", "B"), ("D.md", "A")]])[0])
        self.assertIn("renamed?", readme_runner.check_plan(
            cs, [[("D.md", "A"), ("D.md", "B"), ("D.md", "C")]])[0])


if __name__ == "__main__":
    unittest.main()
