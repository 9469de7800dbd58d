"""sanitized_test: an existing test target rebuilt under ASan + UBSan.

`--config=asan` instruments the whole tree, which takes longer than CI's
budget on a 2-core machine. This rule instead moves one test (and every
library of this workspace it links) into a sanitized configuration through a
Starlark transition, so `tools/bazel test //...` runs a chosen subset
instrumented next to the normal build. Debian's prebuilt libraries (absl,
protobuf, oneDNN) stay uninstrumented, as under --config=asan.
"""

_SANITIZE = ["-fsanitize=address,undefined"]

# The same flags as .bazelrc's `build:asan` (keep the two in step).
# -O1, as AddressSanitizer's documentation suggests: the instrumented copy
# of every library (half of a cold build's compile time went to it at -O2)
# compiles faster, and the checks are the same.
_COPTS = _SANITIZE + [
    "-O1",
    "-fno-sanitize-recover=all",
    "-fno-omit-frame-pointer",
    "-g1",
]

def _sanitize_impl(settings, attr):
    return {
        "//command_line_option:copt": settings["//command_line_option:copt"] + _COPTS,
        "//command_line_option:linkopt": settings["//command_line_option:linkopt"] + _SANITIZE,
        "//command_line_option:strip": "never",
    }

_sanitize = transition(
    implementation = _sanitize_impl,
    inputs = ["//command_line_option:copt", "//command_line_option:linkopt"],
    outputs = [
        "//command_line_option:copt",
        "//command_line_option:linkopt",
        "//command_line_option:strip",
    ],
)

def _environment(threads):
    # As .bazelrc's `test:asan` (which says why intercept_tls_get_addr=0:
    # without it LeakSanitizer's tracer crashed at exit beside libgomp's
    # worker threads), so leaks are checked at any thread count.
    return {
        "ASAN_OPTIONS": "halt_on_error=1:abort_on_error=1:strict_init_order=1:detect_leaks=1:" +
                        "intercept_tls_get_addr=0",
        "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
        "OMP_NUM_THREADS": str(threads),
        "OMP_WAIT_POLICY": "PASSIVE",
    }

def _sanitized_test_impl(ctx):
    test = ctx.attr.test[0][DefaultInfo]
    binary = test.files_to_run.executable
    out = ctx.actions.declare_file(ctx.label.name)
    ctx.actions.symlink(output = out, target_file = binary, is_executable = True)
    runfiles = ctx.runfiles(files = [binary]).merge(test.default_runfiles)
    return [
        DefaultInfo(executable = out, runfiles = runfiles),
        testing.TestEnvironment(_environment(ctx.attr.threads)),
    ]

sanitized_test = rule(
    implementation = _sanitized_test_impl,
    test = True,
    attrs = {
        "test": attr.label(
            cfg = _sanitize,
            executable = True,
            mandatory = True,
            doc = "A cc_test (or any test binary) of this workspace.",
        ),
        "threads": attr.int(
            default = 1,
            doc = "OpenMP threads the test runs with.",
        ),
        "_allowlist_function_transition": attr.label(
            default = "@bazel_tools//tools/allowlists/function_transition_allowlist",
        ),
    },
    doc = "Runs `test` built with -fsanitize=address,undefined; every finding fails it.",
)
