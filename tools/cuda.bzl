"""cuda_library: compile .cu files with the system nvcc, link them as a cc_library.

Self-written (no rules_cuda, nothing to download). One nvcc action per .cu file;
its objects go into a cc_library with alwayslink = 1 so kernel registrations
and static initialisers survive linking into plugins/binaries.
"""

load("@cuda//:defs.bzl", "CUDA_AVAILABLE", "NVCC")

# Ampere (A100) and Hopper (H100/H200) SASS, plus compute_90 PTX so newer GPUs can JIT.
CUDA_GENCODE = [
    "-gencode",
    "arch=compute_80,code=sm_80",
    "-gencode",
    "arch=compute_90,code=sm_90",
    "-gencode",
    "arch=compute_90,code=compute_90",
]

# The virtual architecture whose PTX the fatbin carries (and the objects'
# "ptx" output group holds, for static checks).
PTX_ARCH = "compute_90"

def if_cuda(if_true, if_false = []):
    """Selects if_true when the CUDA toolkit was found at fetch time, else if_false."""
    return if_true if CUDA_AVAILABLE else if_false

def _nvcc_inputs(ctx):
    """(flags, headers): the include paths, defines and copts of ctx.attr.deps
    and ctx.attr.copts, and the headers nvcc reads, for every nvcc action."""
    cc_infos = [d[CcInfo] for d in ctx.attr.deps if CcInfo in d]
    comp = cc_common.merge_cc_infos(cc_infos = cc_infos).compilation_context

    # Workspace root (and its generated-file twin) so "#include \"tools/x.h\"" works.
    flags = ["-I.", "-I" + ctx.bin_dir.path]
    for d in comp.includes.to_list() + comp.quote_includes.to_list():
        if d not in (".", ctx.bin_dir.path):
            flags.append("-I" + d)
    for d in comp.system_includes.to_list():
        flags += ["-isystem", d]
    for d in comp.defines.to_list():
        flags.append("-D" + d)
    flags += ctx.attr.copts

    # Headers are declared inputs: editing one recompiles, and sandboxing sees them.
    headers = depset(ctx.files.hdrs, transitive = [comp.headers])
    return flags, headers

def _stem(src):
    return src.basename[:-len(src.extension) - 1]

def _reproducible_flags(src):
    """nvcc flags that make an object depend on its source's workspace path
    alone, not on where the workspace or the sandbox is.

    cudafe++ names each anonymous namespace _GLOBAL__N__<hash>_<file>_<hash>,
    the first hash taken from --orig_src_path_name, which nvcc sets to the
    source's absolute real path (see `nvcc -dryrun`): two clones, or two
    sandboxes holding copies, gave every kernel in an anonymous namespace a
    different name. -Xcudafe reaches cudafe++ and every cicc pass alike
    (nvcc -dryrun shows both), so host stubs and device code keep agreeing
    on the names; the last --orig_src_path_name given wins. -frandom-seed is
    nvcc's documented option for deterministic PTX and objects (it replaces
    the random numbers nvcc uses in generated names and is passed on to the
    host gcc), one seed per file as its documentation asks. Temporary file
    names need nothing here: with --keep-dir the intermediates are named
    after the source's stem (gemm.compute_90.cudafe1.cpp), never tmpxft_<pid>_...
    """
    return [
        "-frandom-seed=" + src.short_path,
        "-Xcudafe",
        "--orig_src_path_name=" + src.short_path,
    ]

def _cuda_objects_impl(ctx):
    flags, headers = _nvcc_inputs(ctx)
    objs, ptxs, reports = [], [], []
    for src in ctx.files.srcs:
        base = "_objs/%s/%s" % (ctx.label.name, _stem(src))
        obj = ctx.actions.declare_file(base + ".o")
        ptx = ctx.actions.declare_file(base + "." + PTX_ARCH + ".ptx")
        report = ctx.actions.declare_file(base + ".ptxas.txt")
        objs.append(obj)
        ptxs.append(ptx)
        reports.append(report)

        # Private temp dir next to the object: nvcc's fixed-name temporaries in a
        # shared /tmp collide between parallel (sandboxed) actions. --keep
        # leaves the PTX the fatbin carries there, and -Xptxas -v writes
        # ptxas's resource report (registers, stack, spills per kernel and
        # architecture) to stderr: both kept for the static checks in
        # //tools/cuda_static, at no extra compile.
        # relocate_sources: nvcc reads a copy of the source made inside the
        # action's own folder (another absolute path, the same workspace
        # path), so //plugins/backends/cuda:reproducible_build_test compares
        # the plugin with one whose every object came from elsewhere.
        ctx.actions.run_shell(
            inputs = depset([src], transitive = [headers]),
            outputs = [obj, ptx, report],
            command = """set -e
tmp="$1.tmp"; ptx="$2"; report="$3"; stem="$4"; relocate="$5"; shift 5
rm -rf "$tmp"; mkdir -p "$tmp"
if [ "$relocate" = 1 ]; then
  src="${@: -3:1}"
  mkdir -p "$tmp/relocated"
  cp "$src" "$tmp/relocated/"
  set -- "${@:1:$#-3}" "$tmp/relocated/$(basename "$src")" "${@: -2}"
fi
if ! TMPDIR="$tmp" "$@" --keep --keep-dir "$tmp" -Xptxas -v 2> "$report"; then
  grep -v '^ptxas info\\|^    [0-9]* bytes stack frame' "$report" >&2
  exit 1
fi
grep -v '^ptxas info\\|^    [0-9]* bytes stack frame' "$report" >&2 || true
cp "$tmp/$stem.%s.ptx" "$ptx"
rm -rf "$tmp"
""" % PTX_ARCH,
            arguments = [obj.path, ptx.path, report.path, _stem(src),
                         "1" if ctx.attr.relocate_sources else "0", ctx.attr.nvcc] +
                        ["-c", "-O3", "-std=c++17", "-Xcompiler", "-fPIC"] + CUDA_GENCODE +
                        _reproducible_flags(src) + flags + [src.path, "-o", obj.path],
            mnemonic = "NvccCompile",
            progress_message = "nvcc %s" % src.short_path,
            use_default_shell_env = True,
        )
    return [
        # The objects in runfiles too: reproducible_build_test compares them.
        DefaultInfo(files = depset(objs), runfiles = ctx.runfiles(files = objs)),
        OutputGroupInfo(ptx = depset(ptxs), ptxas_report = depset(reports)),
    ]

_cuda_objects = rule(
    implementation = _cuda_objects_impl,
    attrs = {
        "srcs": attr.label_list(allow_files = [".cu"]),
        "hdrs": attr.label_list(allow_files = [".h", ".hpp", ".cuh", ".inl"]),
        "deps": attr.label_list(providers = [CcInfo]),
        "copts": attr.string_list(),
        "nvcc": attr.string(),
        "relocate_sources": attr.bool(default = False),
    },
    output_to_genfiles = False,
)

def cuda_library(name, srcs = [], hdrs = [], deps = [], copts = [], visibility = None, tags = [], relocate_sources = False, **kwargs):
    """cc_library `name` built from .cu srcs by nvcc.

    Args:
      name: cc_library name.
      srcs: .cu files (one nvcc action each).
      hdrs: public headers (also nvcc inputs).
      deps: cc_library deps; their headers/includes/defines reach nvcc and the link.
      copts: extra nvcc flags (use -Xcompiler for host-compiler flags).
      relocate_sources: compile copies of srcs made elsewhere (for the
        reproducibility test: the objects must not change).
      **kwargs: passed to the cc_library (e.g. linkopts, testonly).

    Without a CUDA toolkit the targets are tagged "manual" so `//...` skips
    them; building one explicitly fails with a clear message.
    """
    if not CUDA_AVAILABLE:
        native.genrule(
            name = name + "_no_cuda",
            outs = [name + "_no_cuda.cc"],
            cmd = "echo 'Mantissa: %s needs the CUDA toolkit (/usr/local/cuda or $$CUDA_PATH)' >&2; exit 1" % name,
            tags = ["manual"],
        )
        native.cc_library(
            name = name,
            srcs = [name + "_no_cuda.cc"],
            hdrs = hdrs,
            deps = deps,
            visibility = visibility,
            tags = tags + ["manual"],
            **kwargs
        )
        return

    _cuda_objects(
        name = name + "_cuda_objs",
        srcs = srcs,
        hdrs = hdrs,
        deps = deps + ["@cuda//:headers"],
        copts = copts,
        nvcc = NVCC,
        relocate_sources = relocate_sources,
        tags = tags,
        testonly = kwargs.get("testonly", False),
    )
    native.cc_library(
        name = name,
        srcs = [name + "_cuda_objs"],
        hdrs = hdrs,
        deps = deps + ["@cuda//:cudart"],
        alwayslink = 1,
        visibility = visibility,
        tags = tags,
        **kwargs
    )
