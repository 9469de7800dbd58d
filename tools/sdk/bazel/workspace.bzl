"""WORKSPACE setup for a Bazel workspace that consumes the Mantissa SDK bundle.

Usage in the consumer's WORKSPACE (the bundle unpacked to ./mantissa_sdk, or
anywhere with --override_repository=mantissa_sdk=/abs/path/mantissa_sdk):

    local_repository(name = "mantissa_sdk", path = "mantissa_sdk")
    load("@mantissa_sdk//share/mantissa/bazel:workspace.bzl",
         "mantissa_sdk_dependencies")
    mantissa_sdk_dependencies()

It works offline with Debian's Bazel 4.2.3 (bazel-bootstrap) exactly as the
Mantissa repository does: nothing is downloaded.
"""

_SHARE = "@mantissa_sdk//share/mantissa/bazel:"

def _bundled_repository_impl(rctx):
    # Lays out files shipped in the bundle as a repository of their own.
    for label, dest in rctx.attr.files.items():
        rctx.symlink(rctx.path(label), dest)
    rctx.file("WORKSPACE", "workspace(name = \"%s\")\n" % rctx.name)

_bundled_repository = repository_rule(
    implementation = _bundled_repository_impl,
    attrs = {"files": attr.label_keyed_string_dict(allow_files = True)},
    local = True,
)

def mantissa_sdk_dependencies():
    """Declares the repositories Bazel 4.2.3's @bazel_tools asks for.

    Call after declaring @mantissa_sdk and before anything that builds C++.
    Needs Debian's bazel-platforms and bazel-rules-java packages.
    """

    # @bazel_tools//tools/cpp loads @rules_cc//cc:defs.bzl; Debian's rules_cc
    # 0.0.4 is too new for 4.2.3, so a shim forwards to the native rules.
    _bundled_repository(
        name = "rules_cc",
        files = {
            _SHARE + "rules_cc_root.BUILD": "BUILD",
            _SHARE + "rules_cc_cc.BUILD": "cc/BUILD",
            _SHARE + "rules_cc_defs.bzl": "cc/defs.bzl",
        },
    )

    # Registered toolchain packages in @bazel_tools need these even for C++.
    native.local_repository(
        name = "platforms",
        path = "/usr/share/bazel/platforms",  # Debian package bazel-platforms
    )
    native.local_repository(
        name = "rules_java",
        path = "/usr/share/bazel/rules/java",  # Debian package bazel-rules-java
    )

    # Every test depends on two labels in here; empty stand-ins (no coverage).
    _bundled_repository(
        name = "remote_coverage_tools",
        files = {_SHARE + "remote_coverage_tools.BUILD": "BUILD"},
    )
