"""Rules for building Mantissa plugins against the SDK bundle (@mantissa_sdk).

    load("@mantissa_sdk//share/mantissa/bazel:plugin.bzl",
         "mantissa_plugin", "mantissa_plugin_conformance_test")

    mantissa_plugin(name = "mnt_precision_mine", srcs = ["mine.cc"])
    mantissa_plugin_conformance_test(
        name = "conformance_test",
        plugin = ":mnt_precision_mine.so",
    )
"""

_LDS = "@mantissa_sdk//:share/mantissa/plugin_exports.lds"

def mantissa_plugin(name, srcs = [], deps = [], copts = [], linkopts = [], **kwargs):
    """Builds `<name>.so`, a plugin that exports only MNT_GetPluginApi.

    The bundle's version script hides every other symbol, so a plugin can
    carry its own copies of libraries without clashing with the host, and
    --no-undefined turns a missing dependency into a link error instead of a
    dlopen() failure at run time. The trainer looks plugins up by file name,
    mnt_<kind>_<plugin name>.so, so name the target accordingly.

    Args:
      name: file stem; the target and the file are `<name>.so`.
      srcs, deps, copts, linkopts: as for cc_binary; the SDK headers
        (@mantissa_sdk//:sdk) are always a dependency.
      **kwargs: passed to cc_binary (data, visibility, tags, ...).
    """
    native.cc_binary(
        name = "%s.so" % name,
        srcs = srcs,
        deps = deps + ["@mantissa_sdk//:sdk"],
        copts = ["-std=c++17"] + copts,
        linkshared = 1,
        additional_linker_inputs = [_LDS],
        linkopts = linkopts + [
            "-Wl,--no-undefined",
            "-Wl,--version-script=$(location %s)" % _LDS,
        ],
        **kwargs
    )

def mantissa_plugin_conformance_test(name, plugin, **kwargs):
    """A test: the bundle's plugin_info and plugin_conformance accept `plugin`.

    Fails when the plugin exports anything but MNT_GetPluginApi, when
    plugin_info refuses it, or when any conformance check fails.

    Args:
      name: the test's name.
      plugin: the `<name>.so` target of a mantissa_plugin.
      **kwargs: passed to sh_test (size, tags, ...).
    """
    native.sh_test(
        name = name,
        srcs = ["@mantissa_sdk//share/mantissa/bazel:conformance_test.sh"],
        args = [
            "$(location @mantissa_sdk//:bin/plugin_info)",
            "$(location @mantissa_sdk//:bin/plugin_conformance)",
            "$(location %s)" % plugin,
        ],
        data = [
            "@mantissa_sdk//:bin/plugin_info",
            "@mantissa_sdk//:bin/plugin_conformance",
            plugin,
        ],
        **kwargs
    )
