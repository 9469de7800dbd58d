"""What the device check runs with on a GPU machine, found rather than
assumed (device_check.py imports this; standard library only, Python 3.8+):

  the interpreter with PyTorch: candidates from PATH, $VIRTUAL_ENV and
      $CONDA_PREFIX, the usual venv and conda places under the search roots
      (/opt/*/.venv, /opt/conda, ...), then a bounded walk of the roots for
      pyvenv.cfg; each is started once with `import torch` (in that order,
      within a time limit, stopping at the first whose torch was built for
      the bundle's CUDA major), and the best one is chosen: torch for that
      CUDA major, then torch for another CUDA, then a CPU-only torch;
  the CUDA libraries: for each of libcublasLt.so.13, libcublas.so.13,
      libcudnn.so.9, libnvrtc.so.13 and libnccl.so.2, the first directory
      holding it among the bundle's lib/, $CUDA_HOME/$CUDA_PATH and the
      roots' cuda and cuda-13* (/usr/local/cuda: lib64,
      targets/x86_64-linux/lib), the chosen
      interpreter's site-packages/nvidia/*/lib and torch/lib, then a
      bounded search of the roots (hidden directories included).
"""
import glob
import json
import os
import subprocess
import time

REQUIRED = ["libcublasLt.so.13", "libcublas.so.13"]
OPTIONAL = ["libcudnn.so.9", "libnvrtc.so.13", "libnccl.so.2"]
CUDA_MAJOR = "13"
SEARCH_ROOTS = ["/opt", "/usr/local", "/root", "/home", "/workspace", "/usr/lib"]
SEARCH_DEPTH = 10
SEARCH_SECONDS = 10.0
PRUNE = {"proc", "sys", "dev", ".git", "node_modules", "__pycache__", "bazel-disk", "_bazel_root",
         "bazel-out", ".cache"}

# Where a PyTorch image keeps its interpreter, relative to a search root.
VENV_PATTERNS = [".venv/bin/python3", "venv/bin/python3", "*/.venv/bin/python3",
                 "*/venv/bin/python3", "*/*/.venv/bin/python3", "conda/bin/python3",
                 "conda/envs/*/bin/python3", "miniconda3/bin/python3",
                 "miniconda3/envs/*/bin/python3", "*/bin/python3"]
PROBE_SECONDS = 25.0    # one `import torch` (a cold disk on a fresh machine is slow)
PYTHON_SECONDS = 30.0   # every probe together
VENV_WALK_DEPTH = 5

# Run by each candidate: what it is, and its torch. The marker keeps the
# answer apart from anything a sitecustomize prints.
PROBE = r"""
import json, os, sys
out = {"executable": sys.executable, "version": sys.version.split()[0], "prefix": sys.prefix,
       "site": [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]}
try:
    import torch
    out["torch"] = torch.__version__
    out["torch_cuda"] = torch.version.cuda or ""
    out["torch_lib"] = os.path.join(os.path.dirname(torch.__file__), "lib")
except Exception as e:
    out["error"] = "%s: %s" % (type(e).__name__, (str(e).splitlines() or [""])[0][:160])
print("MANTISSA_PROBE " + json.dumps(out))
"""


# ---------------------------------------------------------------- interpreter

def python_candidates(roots, path=None, environ=None):
    """Interpreters to try, in order, without duplicates: PATH's python3 and
    python, $VIRTUAL_ENV and $CONDA_PREFIX, then VENV_PATTERNS under each
    root. Two names of one interpreter in one folder (python3 and python;
    /bin and /usr/bin where one links to the other) count once; a venv's
    python, a link to the same binary from another folder, counts."""
    environ = os.environ if environ is None else environ
    path = environ.get("PATH", "") if path is None else path
    seen, out = set(), []

    def add(p):
        p = os.path.abspath(p)
        if not (os.path.isfile(p) and os.access(p, os.X_OK)):
            return
        key = (os.path.realpath(p), os.path.realpath(os.path.dirname(p)))
        if key not in seen:
            seen.add(key)
            out.append(p)

    for d in path.split(os.pathsep):
        if d:
            for name in ("python3", "python"):
                add(os.path.join(d, name))
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        if environ.get(var):
            add(os.path.join(environ[var], "bin", "python3"))
    for root in roots:
        for pattern in VENV_PATTERNS:
            for p in sorted(glob.glob(os.path.join(root, pattern))):
                add(p)
    return out


def venvs_under(roots, seconds, depth=VENV_WALK_DEPTH):
    """bin/python3 of every pyvenv.cfg folder under roots (hidden folders
    too), at most `depth` levels and `seconds` seconds."""
    found, _ = search(["pyvenv.cfg"], roots, depth=depth, seconds=seconds)
    return [os.path.join(d, "bin", "python3") for d in found["pyvenv.cfg"]]


def probe(python, seconds=PROBE_SECONDS):
    """What `python` says about itself and its torch: a dict (with "error"
    where torch does not import), or None with why it did not answer."""
    try:
        p = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, timeout=seconds)
    except subprocess.TimeoutExpired:
        return None, f"no answer in {seconds:.0f} s"
    except OSError as e:
        return None, f"cannot start: {e}"
    for line in p.stdout.splitlines():
        if line.startswith("MANTISSA_PROBE "):
            try:
                return json.loads(line[len("MANTISSA_PROBE "):]), ""
            except ValueError:
                break
    err = (p.stderr.strip().splitlines() or ["no output"])[-1][:160]
    return None, f"exit {p.returncode}: {err}"


def rank(info, cuda_major=CUDA_MAJOR):
    """3: torch built for the bundle's CUDA major; 2: for another CUDA;
    1: a CPU-only torch; 0: no torch."""
    if info is None or "torch" not in info:
        return 0
    cuda = info.get("torch_cuda") or ""
    if not cuda:
        return 1
    return 3 if cuda.split(".")[0] == cuda_major else 2


def describe(info):
    if "torch" not in info:
        return f"Python {info['version']}, no torch ({info.get('error', '?')})"
    cuda = info.get("torch_cuda") or "none (CPU-only build)"
    return f"Python {info['version']}, torch {info['torch']}, torch's CUDA {cuda}"


def choose_python(lines, roots=SEARCH_ROOTS, seconds=PYTHON_SECONDS, only="", path=None,
                  environ=None, cuda_major=CUDA_MAJOR):
    """The interpreter for PyTorch's side (its probe dict), or None; every
    candidate tried and what it said go to `lines`. `only`: that
    interpreter and no other (--torch_python)."""
    deadline = time.time() + seconds
    best, best_rank, tried = None, 0, set()

    def try_all(candidates):
        nonlocal best, best_rank
        for c in candidates:
            if c in tried:
                continue
            tried.add(c)
            left = deadline - time.time()
            if left < 1:
                lines.append(f"  (stopped: the {seconds:.0f} s for finding an interpreter are spent)")
                return True
            info, why = probe(c, min(PROBE_SECONDS, left))
            r = rank(info, cuda_major)
            lines.append(f"  {c}: {describe(info) if info else why}")
            if info is not None and (best is None or r > best_rank):
                best, best_rank = info, r
            if r == 3:
                return True
        return False

    if only:
        try_all([only])
    else:
        done = try_all(python_candidates(roots, path, environ))
        if not done:
            t = time.time()
            more = venvs_under(roots, max(0.0, min(5.0, deadline - time.time())))
            lines.append(f"  searched {', '.join(roots)} for pyvenv.cfg (depth {VENV_WALK_DEPTH}) "
                         f"in {time.time() - t:.1f} s: {len(more)} found")
            try_all(more)
    return best if best_rank > 0 else None


# ---------------------------------------------------------------- libraries

def toolkit_dirs(roots=SEARCH_ROOTS):
    """$CUDA_HOME and $CUDA_PATH, then cuda and cuda-13* under each root
    (/usr/local/cuda with the default roots): lib64 and the target's lib."""
    homes = [os.environ[v] for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    for root in roots:
        homes.append(os.path.join(root, "cuda"))
        homes += sorted(glob.glob(os.path.join(root, f"cuda-{CUDA_MAJOR}*")), reverse=True)
    dirs = []
    for home in homes:
        dirs += [os.path.join(home, "lib64"), os.path.join(home, "targets/x86_64-linux/lib")]
    return dirs


def python_lib_dirs(python_info):
    """site-packages/nvidia/*/lib and torch/lib of the chosen interpreter:
    a PyTorch image's CUDA libraries, found without a search."""
    if not python_info:
        return []
    dirs = []
    for sp in python_info.get("site", []):
        dirs += sorted(glob.glob(os.path.join(sp, "nvidia", "*", "lib")))
    if python_info.get("torch_lib"):
        dirs.append(python_info["torch_lib"])
    return dirs


def search(names, roots=SEARCH_ROOTS, depth=SEARCH_DEPTH, seconds=SEARCH_SECONDS):
    """{name: [dirs holding it]} by walking `roots` (hidden directories too),
    at most `depth` levels and `seconds` seconds; plus whether it was cut."""
    found = {n: [] for n in names}
    deadline = time.time() + seconds
    cut = False
    for root in roots:
        if not os.path.isdir(root):
            continue
        base = root.rstrip("/").count("/")
        for d, subdirs, files in os.walk(root, followlinks=False):
            if time.time() > deadline:
                cut = True
                break
            level = d.count("/") - base
            subdirs[:] = sorted(s for s in subdirs if s not in PRUNE) if level < depth else []
            for n in names:
                if n in files and os.path.exists(os.path.join(d, n)) and d not in found[n]:
                    found[n].append(d)
    return found, cut


def discover(lines, bundle, python_info=None, roots=SEARCH_ROOTS):
    """The LD_LIBRARY_PATH directories (the bundle's lib first) and
    {soname: path}; where each came from goes to `lines`, every path in
    full with what it links to."""
    chosen = {}
    bundle_lib = os.path.join(bundle, "lib")
    for name in REQUIRED + OPTIONAL:
        for d in [bundle_lib] + toolkit_dirs(roots) + python_lib_dirs(python_info):
            if os.path.exists(os.path.join(d, name)):
                chosen[name] = d
                break
    missing = [n for n in REQUIRED + OPTIONAL if n not in chosen]
    if missing:
        t = time.time()
        found, cut = search(missing, roots)
        lines.append(f"searched {', '.join(roots)} (depth {SEARCH_DEPTH}) for "
                     f"{', '.join(missing)} in {time.time() - t:.1f} s"
                     f"{' (cut at the time limit)' if cut else ''}")
        for n in missing:
            # Prefer the directory that also holds the other CUDA libraries
            # already chosen (one consistent install), else the first found.
            dirs = found[n]
            same = [d for d in dirs if d in chosen.values()]
            if dirs:
                chosen[n] = (same or dirs)[0]
            if len(dirs) > 1:
                lines.append(f"  {n}: also in {', '.join(d for d in dirs if d != chosen[n])}")
    dirs = [bundle_lib]
    for n in REQUIRED + OPTIONAL:
        if n in chosen and chosen[n] not in dirs:
            dirs.append(chosen[n])
    for n in REQUIRED + OPTIONAL:
        if n in chosen:
            path = os.path.join(chosen[n], n)
            lines.append(f"{n}: {path} -> {os.path.realpath(path)}")
        else:
            lines.append(f"{n}: NOT FOUND{'' if n in OPTIONAL else ' (required)'}")
    return dirs, {n: os.path.join(d, n) for n, d in chosen.items()}


def library_problems(libs):
    """Why the libraries found cannot run everything: a required one
    missing, or cuDNN without NVRTC (its Hopper attention kernels are
    compiled at run time; without NVRTC attention would fall back)."""
    out = [f"{n} not found (required)" for n in REQUIRED if n not in libs]
    if "libcudnn.so.9" in libs and "libnvrtc.so.13" not in libs:
        out.append("libcudnn.so.9 found but not libnvrtc.so.13, which cuDNN needs for its "
                   "run-time compiled attention kernels")
    return out
