"""fp16_floor's floor_hits from a Mantissa checkpoint.

  python3 fp16_floor_state.py CHECKPOINT   # prints floor_hits

The checkpoint is a 20-byte header (magic, version, payload size), then the
CheckpointData protobuf, whose field 16 (precision_plugin_state) holds
fp16_floor's format 1: a version byte and 8 little-endian bytes. Used by
examples_test.sh and frozen/frozen_sources_test.sh.
"""
import struct
import sys


def varint(b, p):
    v = s = 0
    while True:
        c = b[p]
        p += 1
        v |= (c & 0x7F) << s
        s += 7
        if not c & 0x80:
            return v, p


def precision_plugin_state(path):
    b = open(path, "rb").read()
    if b[:8] != b"MNTCKPT\0":
        raise SystemExit("%s: not a Mantissa checkpoint" % path)
    end = 20 + struct.unpack("<Q", b[12:20])[0]
    p, state = 20, b""
    while p < end:
        key, p = varint(b, p)
        wire = key & 7
        if wire == 0:
            _, p = varint(b, p)
        elif wire == 1:
            p += 8
        elif wire == 5:
            p += 4
        elif wire == 2:
            n, p = varint(b, p)
            if key >> 3 == 16:
                state = b[p:p + n]
            p += n
        else:
            raise SystemExit("%s: unexpected wire type %d" % (path, wire))
    return state


def main():
    state = precision_plugin_state(sys.argv[1])
    if len(state) != 9 or state[0] != 1:
        raise SystemExit("plugin state %r is not fp16_floor's" % state)
    print(int.from_bytes(state[1:], "little"))


if __name__ == "__main__":
    main()
