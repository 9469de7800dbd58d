#!/usr/bin/env python3
"""Static checks of the CUDA backend's kernels, run in CI without a GPU on
what the build itself produced (tools/cuda.bzl keeps, per .cu file, the
compute_90 PTX the fatbin carries and ptxas's -v resource report):

  no-fma      the kernels whose contract is the CPU backend's bits (the
              optimizer updates, loss scaling) hold no fused multiply-add:
              any fma/mad on f32/f64 in their PTX fails. A canary file
              (a * b + c written plainly) must show one, which proves that
              nvcc does contract and that this check would see it.
  resources   no kernel spills registers to local memory (sm_80 and sm_90);
              the kernels named by --no-stack keep no stack frame at all;
              every kernel launched (Launch() in the sources) with more
              than 256 threads declares __launch_bounds__ (.maxntid) of at
              least its block, no launch exceeds a kernel's bound, and
              registers x bound fit the 65536 of an SM; every launch goes
              through Launch() (no <<<>>>), with a block size this check
              can read (a literal or a named constant).
  fatbin      every fatbin container in the plugin holds sm_90 machine
              code (not only PTX that the driver would have to compile).

Standard library only; prints one line per finding and exits 1 on any.
"""
import argparse
import os
import re
import shutil
import struct
import subprocess
import sys

REGISTERS_PER_SM = 65536
DEFAULT_BLOCK_LIMIT = 256  # launches above this need __launch_bounds__


def demangle(names):
    """{mangled: demangled} through c++filt when there is one."""
    names = sorted(set(names))
    cxxfilt = shutil.which("c++filt")
    if not cxxfilt or not names:
        return {n: n for n in names}
    out = subprocess.run([cxxfilt], input="\n".join(names), capture_output=True,
                         text=True).stdout.splitlines()
    return dict(zip(names, out)) if len(out) == len(names) else {n: n for n in names}


# ------------------------------------------------------------------- PTX

FUNC_START = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.(entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)\s*\(")
FUSED = re.compile(r"^\s*(?:@!?%\w+\s+)?(fma|mad)(\.[a-z]+)*\.f(32|64)(x2)?\b")


def ptx_functions(text):
    """[(kind, name, maxntid or None, [body lines])] of a PTX file."""
    funcs = []
    cur = None
    for line in text.splitlines():
        m = FUNC_START.match(line)
        if m:
            cur = [m.group(1), m.group(2), None, []]
            funcs.append(cur)
            continue
        if cur is None:
            continue
        d = re.match(r"^\s*\.maxntid\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?", line)
        if d:
            cur[2] = int(d.group(1)) * int(d.group(2) or 1) * int(d.group(3) or 1)
        cur[3].append(line)
        if line.startswith("}"):
            cur = None
    return [tuple(f) for f in funcs]


def fused_lines(body):
    return [l.strip() for l in body if FUSED.match(l)]


def check_no_fma(ptx_files, canary, only):
    problems = []
    stems = {os.path.basename(p).split(".")[0]: p for p in ptx_files}
    missing = [s for s in only if s not in stems]
    if missing:
        problems.append(f"no PTX for {', '.join(missing)} among {sorted(stems)}")
    ptx_files = [stems[s] for s in only if s in stems]
    with open(canary) as f:
        canary_hits = sum(len(fused_lines(b)) for _, _, _, b in ptx_functions(f.read()))
    if canary_hits == 0:
        problems.append(f"{canary}: the canary (a * b + c) compiled to no fma: the check "
                        "could not see a contraction, so it proves nothing")
    else:
        print(f"canary: {canary_hits} fused multiply-add(s) in {os.path.basename(canary)} "
              "(nvcc contracts by default; this check sees it)")
    for path in ptx_files:
        with open(path) as f:
            funcs = ptx_functions(f.read())
        names = demangle(n for _, n, _, _ in funcs)
        found = []
        for kind, name, _, body in funcs:
            found += [(kind, name, h) for h in fused_lines(body)[:3]]
        for kind, name, h in found:
            problems.append(f"{os.path.basename(path)}: {kind} {names[name]}: {h} (a fused "
                            "multiply-add where the CPU backend rounds twice: spell the "
                            "math with rounded_arith.h's MulF32/AddF32/SubF32)")
        print(f"{os.path.basename(path)}: {len(funcs)} functions, "
              + ("FUSED MULTIPLY-ADDS FOUND" if found else "no fma/mad on f32/f64"))
    return problems


# --------------------------------------------------------- ptxas reports

def parse_ptxas(text):
    """{(name, arch): {"registers", "stack", "spill_stores", "spill_loads"}}."""
    out = {}
    entry, arch, props = None, None, None
    for line in text.splitlines():
        m = re.search(r"Compiling entry function '([^']+)' for '(sm_\d+)'", line)
        if m:
            entry, arch = m.group(1), m.group(2)
            out.setdefault((entry, arch), {})
            continue
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            props = m.group(1)
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads",
                      line)
        if m and props is not None and arch is not None:
            rec = out.setdefault((props, arch), {})
            rec["stack"], rec["spill_stores"], rec["spill_loads"] = map(int, m.groups())
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and entry is not None:
            out[(entry, arch)]["registers"] = int(m.group(1))
    return out


# -------------------------------------------------------- launch sites

def constants(sources):
    """Named integer constants (constexpr int/int64_t NAME = EXPR;) of the
    sources, evaluated in order (EXPR of literals and earlier names)."""
    table = {}
    for path in sources:
        with open(path) as f:
            for m in re.finditer(r"constexpr\s+(?:int|int64_t|unsigned|size_t)\s+(\w+)\s*=\s*([^;{]+);",
                                 f.read()):
                expr = m.group(2)
                if re.fullmatch(r"[\w\s*/+()-]+", expr):
                    try:
                        table[m.group(1)] = int(eval(expr, {"__builtins__": {}}, dict(table)))
                    except Exception:  # noqa: BLE001 - not a constant we can read
                        pass
    return table


def split_args(text, start):
    """The comma-separated arguments of the call whose '(' is at text[start],
    and the end index; template angle brackets in the first argument."""
    depth, angle, args, cur, i = 0, 0, [], [], start + 1
    while i < len(text):
        c = text[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                args.append("".join(cur).strip())
                return args, i
            depth -= 1
        elif c == "<" and depth == 0 and not args and re.search(r"\w$", "".join(cur)):
            angle += 1
        elif c == ">" and depth == 0 and angle > 0:
            angle -= 1
        elif c == "," and depth == 0 and angle == 0:
            args.append("".join(cur).strip())
            cur = []
            i += 1
            continue
        cur.append(c)
        i += 1
    return args, i


def launch_sites(sources, table):
    """[(file:line, kernel base name, block or None, block text)], and the
    problems (<<<>>> launches)."""
    sites, problems = [], []
    for path in sources:
        with open(path) as f:
            text = f.read()
        code = re.sub(r"//[^\n]*", lambda m: " " * len(m.group(0)), text)
        for m in re.finditer(r"<<<", code):
            line = code.count("\n", 0, m.start()) + 1
            problems.append(f"{os.path.basename(path)}:{line}: a <<<>>> launch: launch through "
                            "Launch() (launch.h), so the status is checked and this check "
                            "sees the block size")
        for m in re.finditer(r"(?<![\w.>:])Launch\(", code):
            args, _ = split_args(code, m.end() - 1)
            if len(args) < 3:
                continue
            line = code.count("\n", 0, m.start()) + 1
            kernel = re.sub(r"<.*", "", args[0]).strip().split("::")[-1]
            block_text = " ".join(args[2].split())
            try:
                block = int(eval(block_text, {"__builtins__": {}}, dict(table)))
            except Exception:  # noqa: BLE001
                block = None
            sites.append((f"{os.path.basename(path)}:{line}", kernel, block, block_text))
    return sites, problems


def base_name(demangled):
    """The kernel's unqualified name without template arguments or params:
    'ns::(anonymous namespace)::K<T>(int)' -> 'K'."""
    s = demangled.replace("(anonymous namespace)", "anonymous")
    depth, out = 0, []
    for c in s:
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == "(" and depth == 0:
            break
        elif depth == 0:
            out.append(c)
    name = "".join(out).strip().split(" ")[-1]
    return name.split("::")[-1]


def check_resources(ptx_files, reports, sources, headers, no_stack):
    problems = []
    entries = {}  # mangled -> maxntid
    for path in ptx_files:
        with open(path) as f:
            for kind, name, maxntid, _ in ptx_functions(f.read()):
                if kind == "entry":
                    entries[name] = maxntid
    usage = {}
    for path in reports:
        with open(path) as f:
            usage.update(parse_ptxas(f.read()))
    names = demangle(list(entries) + [n for n, _ in usage])
    by_base = {}
    for mangled in entries:
        by_base.setdefault(base_name(names[mangled]), []).append(mangled)

    archs = sorted({a for _, a in usage})
    if "sm_90" not in archs:
        problems.append(f"no sm_90 function in the ptxas reports (archs: {archs})")
    stacked = []
    for (name, arch), rec in sorted(usage.items()):
        if rec.get("spill_stores", 0) or rec.get("spill_loads", 0):
            problems.append(f"{names[name]} ({arch}): {rec['spill_stores']} bytes spill stores, "
                            f"{rec['spill_loads']} bytes spill loads")
        if rec.get("stack", 0):
            stacked.append((names[name], arch, rec["stack"]))
            if base_name(names[name]) in no_stack:
                problems.append(f"{names[name]} ({arch}): {rec['stack']} bytes stack frame (local "
                                "memory in a hot kernel: index its arrays with constants)")

    table = constants(headers + sources)
    sites, launch_problems = launch_sites(sources, table)
    problems += launch_problems
    wide = 0
    for where, kernel, block, block_text in sites:
        if block is None:
            problems.append(f"{where}: Launch({kernel}, ...) with block '{block_text}': not a "
                            "literal or named constant this check can read")
            continue
        kernels = by_base.get(kernel, [])
        if not kernels:
            problems.append(f"{where}: Launch({kernel}, ...): no kernel of that name in the "
                            "PTX (a launch this check cannot follow)")
            continue
        for mangled in kernels:
            bound = entries[mangled]
            if bound is None and block > DEFAULT_BLOCK_LIMIT:
                problems.append(f"{where}: {names[mangled]} is launched with {block} threads "
                                f"(> {DEFAULT_BLOCK_LIMIT}) but declares no __launch_bounds__")
            elif bound is not None and block > bound:
                problems.append(f"{where}: {names[mangled]} is launched with {block} threads, "
                                f"over its __launch_bounds__({bound}): the launch would fail")
            if block > DEFAULT_BLOCK_LIMIT:
                wide += 1
            threads = bound if bound is not None else block
            for arch in archs:
                regs = usage.get((mangled, arch), {}).get("registers")
                if regs is not None and regs * threads > REGISTERS_PER_SM:
                    problems.append(f"{names[mangled]} ({arch}): {regs} registers x {threads} "
                                    f"threads > {REGISTERS_PER_SM}")
    if not wide:
        problems.append(f"no launch with more than {DEFAULT_BLOCK_LIMIT} threads found: the "
                        "one-block reductions launch kernels of kWideThreads, so the launch "
                        "sites or the PTX were not read")
    print(f"{len(usage)} function/arch records in {len(reports)} ptxas reports ({', '.join(archs)}); "
          f"{len(entries)} kernels; {len(sites)} launch sites, {wide} kernel instantiations "
          f"launched with more than {DEFAULT_BLOCK_LIMIT} threads")
    if stacked:
        print("stack frames (no spills; allowed outside --no-stack):")
        for n, a, b in stacked:
            print(f"  {b:5d} bytes  {a}  {n}")
    return problems


# ------------------------------------------------------------------ fatbin

def elf_sections(data):
    """{name: bytes} of a 64-bit little-endian ELF file."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
    heads = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab = heads[shstrndx]
    names = data[strtab[4]:strtab[4] + strtab[5]]
    out = {}
    for h in heads:
        name = names[h[0]:names.index(b"\0", h[0])].decode()
        if h[1] != 8:  # SHT_NOBITS holds nothing
            out[name] = data[h[4]:h[4] + h[5]]
    return out


FATBIN_MAGIC = 0xBA55ED50


def fatbin_entries(blob):
    """[[(kind, arch)] per container] of a .nv_fatbin section: kind 1 is
    PTX, 2 is an ELF cubin (machine code); arch is the SM number."""
    containers, off = [], 0
    while off + 16 <= len(blob):
        magic, _version, header_size, fat_size = struct.unpack_from("<IHHQ", blob, off)
        if magic != FATBIN_MAGIC:
            off += 8  # containers are 8-byte aligned; skip padding
            continue
        entries, e = [], off + header_size
        end = off + header_size + fat_size
        while e + 0x20 <= end:
            kind, _flags, entry_header, payload = struct.unpack_from("<HHIQ", blob, e)
            arch, = struct.unpack_from("<I", blob, e + 0x1c)
            if entry_header == 0:
                break
            entries.append((kind, arch))
            e += entry_header + payload
        containers.append(entries)
        off = end
    return containers


def check_fatbin(plugin, arch):
    with open(plugin, "rb") as f:
        sections = elf_sections(f.read())
    blob = sections.get(".nv_fatbin")
    if blob is None:
        return [f"{plugin}: no .nv_fatbin section (no device code?)"]
    containers = fatbin_entries(blob)
    if not containers:
        return [f"{plugin}: .nv_fatbin holds no fatbin container"]
    problems = []
    kinds = {1: "PTX", 2: "SASS"}
    summary = sorted({f"{kinds.get(k, k)} sm_{a}" for c in containers for k, a in c})
    print(f"{os.path.basename(plugin)}: {len(containers)} fatbin containers; entries: "
          f"{', '.join(summary)}")
    for i, c in enumerate(containers):
        if (2, arch) not in c:
            problems.append(f"fatbin container {i}: no sm_{arch} machine code, only "
                            f"{[(kinds.get(k, k), a) for k, a in c]}")
    return problems


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="check", required=True)
    f = sub.add_parser("no-fma")
    f.add_argument("--canary", required=True)
    f.add_argument("--only", required=True,
                   help="comma-separated .cu stems whose PTX must hold no fma")
    f.add_argument("ptx", nargs="+")
    r = sub.add_parser("resources")
    r.add_argument("--ptx", nargs="+", required=True)
    r.add_argument("--reports", nargs="+", required=True)
    r.add_argument("--sources", nargs="+", required=True, help="the .cu files (launch sites)")
    r.add_argument("--headers", nargs="*", default=[], help="headers defining constants")
    r.add_argument("--no-stack", default="", dest="no_stack",
                   help="comma-separated kernel names that must keep no stack frame")
    b = sub.add_parser("fatbin")
    b.add_argument("--arch", type=int, default=90)
    b.add_argument("plugin")
    args = p.parse_args(argv)
    if args.check == "no-fma":
        problems = check_no_fma(args.ptx, args.canary, args.only.split(","))
    elif args.check == "resources":
        problems = check_resources(args.ptx, args.reports, args.sources, args.headers,
                                   set(filter(None, args.no_stack.split(","))))
    else:
        problems = check_fatbin(args.plugin, args.arch)
    for line in problems:
        print("FAIL: " + line)
    print(f"{args.check}: {'FAIL, ' + str(len(problems)) + ' finding(s)' if problems else 'PASS'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
