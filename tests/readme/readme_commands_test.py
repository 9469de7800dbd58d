"""README.md's and tools/gpt2/README.md's commands, run as written (issue 41;
SHORTENED below: five retrainings of the main job run 60 steps).

The `# not run in CI: REASON` mark: readme_commands.py; how each command
runs: readme_runner.py. Each shard of PLAN is one Bazel shard (shard_count
in BUILD must equal len(PLAN)); its sections share one HOME and working
directory, because later commands use what earlier ones made (the main
job's run folder). Every section that holds commands must be in exactly one
shard.

docs/*.md are not read: docs/plugins.md's tutorial is what
//tests/sdk:examples_test and :bazel_consumer_test run; the other documents'
commands are GPU, benchmark, fuzzing and sanitizer runs of minutes.

  args: --docs_root=DIR --binary=LABEL=PATH ...
"""

import sys

from tests.readme import readme_runner

DOCS = ["README.md", "tools/gpt2/README.md"]

PLAN = [
    # The main job, then what reads its run folder. About 40 s of CPU.
    [("README.md", "The two commands"),
     ("README.md", "Run folders: every run keeps its work, and never mixes it with another's")],
    # "Watching a run" trains the main job again (60 steps): its folder feeds
    # the exports. About 40 s of CPU.
    [("README.md", "Watching a run"), ("README.md", "Every precision, side by side"),
     ("README.md", "Hugging Face export and import"),
     ("README.md", "Fine-tuning a Hugging Face GPT-2 with LoRA, then exporting it"),
     ("tools/gpt2/README.md", "llm.c checkpoints"), ("tools/gpt2/README.md", "Sampling"),
     ("tools/gpt2/README.md", "Hugging Face")],
    # About 10 s of CPU.
    [("README.md", "Will it fit? Memory before the run"), ("README.md", "FP8 training"),
     ("README.md", "How to run the device check"), ("README.md", "Data parallel")],
]

# What the documents assume a reader has, copied into the working directory.
FILES_A_READER_BRINGS = {
    "notes.txt": "/usr/share/games/fortunes/fortunes",  # "your own text" (fortunes-min)
}

# Commands that train the main job's 300 steps again with one thing changed:
# 60 steps check what they add (the flag is taken, the run completes and
# saves, what reads it later works) in a fifth of the time. Each cost 15-40 s
# of CPU, together about two thirds of this test; README.md's first command,
# the main job itself, still runs as written. The command's own arguments
# come after these, so its own --steps would still win.
SHORTENED = {
    "tools/bazel run //:train -- --precision=bf16": "--steps=60",
    "tools/bazel run //:train -- --gradient_checkpointing          # recompute blocks in backward":
        "--steps=60",
    "tools/bazel run //:train -- --tensorboard_dir=$HOME/runs/gpt2": "--steps=60",
    "tools/bazel run //:train -- --dataset=text --text_path=notes.txt --tokenizer=sentencepiece \\":
        "--steps=60",
    "tools/bazel run //:train                      # writes ~/.cache/mantissa/runs/gpt2-fortunes-auto/latest":
        "--steps=60",
}

if __name__ == "__main__":
    sys.exit(readme_runner.main(sys.argv[1:], readme_runner.Setup(
        docs=DOCS, plan=PLAN, files=FILES_A_READER_BRINGS, shortened=SHORTENED)))
