#!/usr/bin/env python3
"""Independent writer/reader of llm.c / modded-nanogpt token shards, using only the struct
module, so the C reader is checked against code that shares nothing with it.

  shard_tool.py write PATH [--magic M] [--version V] [--count N] [--truncate K] TOKEN...
      header = 256 little-endian int32 (magic, version, count, zeros); then uint16 tokens.
      --count overrides the header count; --truncate drops the last K bytes of the file.
  shard_tool.py read PATH
      prints "count <N> sum <sum of tokens> first <t0> last <tN-1>" after checking the header.
"""
import struct
import sys


def write(argv):
    path, magic, version, count, truncate, tokens = None, 20240520, 1, None, 0, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--magic", "--version", "--count", "--truncate"):
            v = int(argv[i + 1])
            i += 2
            if a == "--magic":
                magic = v
            elif a == "--version":
                version = v
            elif a == "--count":
                count = v
            else:
                truncate = v
            continue
        if path is None:
            path = a
        else:
            tokens.append(int(a))
        i += 1
    if count is None:
        count = len(tokens)
    header = struct.pack("<256i", magic, version, count, *([0] * 253))
    body = struct.pack("<%dH" % len(tokens), *tokens)
    data = header + body
    if truncate:
        data = data[:-truncate]
    with open(path, "wb") as f:
        f.write(data)


def read(argv):
    with open(argv[0], "rb") as f:
        data = f.read()
    magic, version, count = struct.unpack_from("<3i", data, 0)
    if magic != 20240520 or version != 1:
        sys.exit("bad header")
    if len(data) != 1024 + 2 * count:
        sys.exit("size mismatch")
    toks = struct.unpack_from("<%dH" % count, data, 1024)
    print("count %d sum %d first %d last %d" % (count, sum(toks), toks[0], toks[-1]))


if __name__ == "__main__":
    {"write": write, "read": read}[sys.argv[1]](sys.argv[2:])
