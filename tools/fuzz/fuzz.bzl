"""fuzz_target: a libFuzzer entry point and the test that replays its inputs."""

def fuzz_target(name, deps):
    """`<name>.cc` defines LLVMFuzzerTestOneInput over `deps`.

    Makes the library `<name>` (for other builds of the target) and
    `<name>_replay_test`, which runs every file in corpus/<name>/ and
    crashes/<name>/ through it.
    """
    native.cc_library(
        name = name,
        srcs = [name + ".cc"],
        deps = deps,
        alwayslink = 1,
    )
    native.cc_test(
        name = name + "_replay_test",
        size = "small",
        srcs = ["replay_main.cc"],
        args = [
            "tools/fuzz/corpus/" + name,
            "tools/fuzz/crashes/" + name,
        ],
        data = native.glob(["corpus/%s/*" % name, "crashes/%s/*" % name]),
        deps = [":" + name],
        visibility = ["//tests/sanitized:__pkg__"],
    )
