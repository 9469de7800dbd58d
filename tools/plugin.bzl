"""mantissa_plugin: a dlopen-able plugin exporting only MNT_GetPluginApi."""

_LDS = "//tools:plugin_exports.lds"

def mantissa_plugin(name, srcs = [], deps = [], copts = [], linkopts = [], **kwargs):
    """Builds `<name>.so` (a cc_binary with linkshared = 1).

    The version script hides every symbol but MNT_GetPluginApi, so plugins can
    carry their own copies of libraries without clashing with the host; and
    --no-undefined turns a missing dependency into a link error instead of a
    dlopen() failure at run time.

    Args:
      name: file stem; the target and file are `<name>.so`. The loader looks
        plugins up as mnt_<kind>_<plugin name>.so, so use e.g.
        "mnt_backend_cpu".
      srcs, deps, copts, linkopts: as for cc_binary.
      **kwargs: passed to cc_binary (data, visibility, tags, ...).
    """
    native.cc_binary(
        name = "%s.so" % name,
        srcs = srcs,
        deps = deps,
        copts = copts,
        linkshared = 1,
        additional_linker_inputs = [_LDS],
        linkopts = linkopts + [
            "-Wl,--no-undefined",
            "-Wl,--version-script=$(location %s)" % _LDS,
        ],
        **kwargs
    )
