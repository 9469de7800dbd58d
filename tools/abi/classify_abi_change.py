#!/usr/bin/env python3
"""Classifies the change between two abidw dumps of the Mantissa ABI.

    classify_abi_change.py OLD.abixml NEW.abixml

Prints one line per finding and exits 0 (no change), 1 (compatible: only
additions: new types, fields appended after the old end of a struct, new
enumerators, new functions) or 2 (incompatible: anything removed, moved,
renamed or retyped, an enumerator renumbered, or a struct that must never
grow (docs/abi.md) changing size). abidiff's exit status cannot tell an
appended field from a reordered one, so the append-only rule is checked here.

Each compatible finding ends with the header that declares what grew, e.g.
"[mnt_collectives.h]": check_snapshot.sh lets additions confined to an
extension's own header go with that extension's version instead of the ABI
minor (docs/abi.md, "Changing the ABI").
"""
import sys
import xml.etree.ElementTree as ET

# Passed in arrays or embedded by value: their sizeof is ABI (docs/abi.md).
NEVER_GROW = {"MNT_Tensor", "MNT_Api_Version", "MNT_LossScalerState",
              "MNT_DataSpec", "MNT_ModelPrecision"}


def load(path):
    root = ET.parse(path).getroot()
    by_id = {e.get("id"): e for e in root.iter() if e.get("id")}
    memo = {}

    def name(tid, depth=0):
        if tid in memo:
            return memo[tid]
        e = by_id.get(tid)
        if e is None or depth > 40:
            return "?"
        tag = e.tag
        if tag in ("type-decl", "typedef-decl", "class-decl", "enum-decl",
                   "union-decl"):
            n = e.get("name") or "anon"
        elif tag == "pointer-type-def":
            n = name(e.get("type-id"), depth + 1) + "*"
        elif tag == "qualified-type-def":
            n = ("const " if e.get("const") == "yes" else "") + name(
                e.get("type-id"), depth + 1)
        elif tag == "array-type-def":
            n = "%s[%s]" % (name(e.get("type-id"), depth + 1),
                            e.get("size-in-bits"))
        elif tag == "function-type":
            params = [name(p.get("type-id"), depth + 1)
                      for p in e.findall("parameter")]
            ret = e.find("return")
            n = "%s(%s)" % (name(ret.get("type-id"), depth + 1)
                            if ret is not None else "void", ", ".join(params))
        else:
            n = tag
        memo[tid] = n
        return n

    # The header declaring each named struct, enum and typedef.
    files = {}
    for e in root.iter():
        if e.tag in ("class-decl", "enum-decl", "typedef-decl") and e.get("name") \
                and e.get("filepath"):
            files.setdefault(e.get("name"), e.get("filepath").rsplit("/", 1)[-1])
    structs, enums = {}, {}
    for e in root.iter("class-decl"):
        if e.get("is-declaration-only") == "yes" or not e.get("name"):
            continue
        members = []
        for dm in e.findall("data-member"):
            v = dm.find("var-decl")
            members.append((v.get("name"), int(dm.get("layout-offset-in-bits")),
                            name(v.get("type-id"))))
        structs[e.get("name")] = (int(e.get("size-in-bits") or 0), members)
    for e in root.iter("enum-decl"):
        if e.get("name"):
            enums[e.get("name")] = {x.get("name"): int(x.get("value"))
                                    for x in e.findall("enumerator")}
    typedefs = {e.get("name"): name(e.get("type-id"))
                for e in root.iter("typedef-decl")}
    return structs, enums, typedefs, files


def main():
    old_s, old_e, old_t, _ = load(sys.argv[1])
    new_s, new_e, new_t, new_files = load(sys.argv[2])
    bad, added = [], []

    def where(name):
        return " [%s]" % new_files.get(name, "?")

    for sname, (size, members) in sorted(old_s.items()):
        if sname not in new_s:
            bad.append("struct %s removed" % sname)
            continue
        nsize, nmembers = new_s[sname]
        nmap = {m[0]: m for m in nmembers}
        for m in members:
            if m[0] not in nmap:
                bad.append("%s.%s removed or renamed" % (sname, m[0]))
            elif nmap[m[0]][1] != m[1]:
                bad.append("%s.%s moved from bit %d to %d" %
                           (sname, m[0], m[1], nmap[m[0]][1]))
            elif nmap[m[0]][2] != m[2]:
                bad.append("%s.%s retyped from %s to %s" %
                           (sname, m[0], m[2], nmap[m[0]][2]))
        old_names = {m[0] for m in members}
        old_end = max([m[1] for m in members] + [-1])
        for m in nmembers:
            if m[0] in old_names:
                continue
            if m[1] <= old_end:
                bad.append("%s.%s inserted at bit %d, not appended" %
                           (sname, m[0], m[1]))
            else:
                added.append("%s.%s appended%s" % (sname, m[0], where(sname)))
        if nsize != size and sname in NEVER_GROW:
            bad.append("%s changed size (%d -> %d bits) but must never grow"
                       % (sname, size, nsize))
    for sname in sorted(set(new_s) - set(old_s)):
        added.append("struct %s added%s" % (sname, where(sname)))
    for ename, values in sorted(old_e.items()):
        if ename not in new_e:
            bad.append("enum %s removed" % ename)
            continue
        for k, v in sorted(values.items()):
            if k not in new_e[ename]:
                bad.append("%s removed or renamed" % k)
            elif new_e[ename][k] != v:
                bad.append("%s renumbered from %d to %d" % (k, v, new_e[ename][k]))
        for k in sorted(set(new_e[ename]) - set(values)):
            added.append("%s = %d added%s" % (k, new_e[ename][k], where(ename)))
    for ename in sorted(set(new_e) - set(old_e)):
        added.append("enum %s added%s" % (ename, where(ename)))
    for tname, target in sorted(old_t.items()):
        if tname.startswith("MNT_") and tname in new_t and new_t[tname] != target:
            bad.append("typedef %s changed from %s to %s" %
                       (tname, target, new_t[tname]))
        elif tname.startswith("MNT_") and tname not in new_t:
            bad.append("typedef %s removed" % tname)
    for tname in sorted(set(new_t) - set(old_t)):
        if tname.startswith("MNT_"):
            added.append("typedef %s added%s" % (tname, where(tname)))
    for line in bad:
        print("incompatible: " + line)
    for line in added:
        print("compatible: " + line)
    sys.exit(2 if bad else 1 if added else 0)


if __name__ == "__main__":
    main()
