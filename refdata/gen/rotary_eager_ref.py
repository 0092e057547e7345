#!/usr/bin/python3
"""Record #16's rotary tables as eager PyTorch computes them (refdata/records/PRESETS.md §2.4).

usage: rotary_eager_ref.py LIST OUT_FILE
LIST is build/dump_refmodel's rotary_bf16.txt ("head_dim base" per line). For each table, the
record's Rotary.forward (records/track_1_short/2024-12-10_MFUTweaks) after model.bfloat16():
    t = torch.arange(T)                  # int64
    freqs = torch.outer(t, inv_freq)     # inv_freq bf16, so t is promoted to bf16 and freqs is bf16
    cos, sin = freqs.cos(), freqs.sin()  # bf16
OUT_FILE receives, all values as the hex bits of the bf16 torch holds (exact in fp64):
  "row HD BASE t th:cos:sin ..." for a few positions t (around 256, 512, 1000, 1024, 4096, 32768,
      65535 and a spread between), one th:cos:sin per pair i < HD/2;
  "fnv HD BASE T HASH": FNV-1a 64 (impl/base/hash.c's gm_hash_bytes) of the whole (T, HD/2) angle table's
      bf16 bits, row-major, little-endian, for T = 1024 and T = 65536.
Row t of the table does not depend on T (outer is elementwise), so the rows stand for every T > t.
"""
import sys

import torch

from ref_model import record16_inv_freq

ROWS = sorted({*range(0, 4), *range(254, 260), *range(510, 514), *range(1000, 1004), *range(1020, 1024),
               *range(4095, 4098), *range(32767, 32770), *range(65533, 65536),
               *((k * 40503) % 64512 + 1024 for k in range(1, 9))})
HASH_T = (1024, 65536)


def fnv1a64(data):
    h = 1469598103934665603
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def bits(x):  # bf16 tensor -> list of its 16-bit patterns
    return [v & 0xFFFF for v in x.contiguous().view(torch.int16).reshape(-1).tolist()]


def table_bytes(x):  # bf16 tensor -> its bits, row-major, little-endian (as the C side hashes them)
    assert sys.byteorder == "little"
    return x.contiguous().view(torch.int16).numpy().tobytes()


def eager_table(T, inv_freq):
    t = torch.arange(T)
    freqs = torch.outer(t, inv_freq)
    cos, sin = freqs.cos(), freqs.sin()
    assert t.dtype == torch.int64 and inv_freq.dtype == torch.bfloat16
    assert freqs.dtype == cos.dtype == sin.dtype == torch.bfloat16
    return freqs, cos, sin


def main():
    list_file, out_file = sys.argv[1], sys.argv[2]
    lines = [f"# torch {torch.__version__} eager: outer(arange(T) [int64], inv_freq [bf16]) -> bf16, then .cos() .sin() -> bf16",
             "# row HD BASE t theta:cos:sin (bf16 bits, one per pair); fnv HD BASE T fnv1a64(theta bf16 bits, (T, HD/2))"]
    for entry in open(list_file):
        hd, base = int(entry.split()[0]), float(entry.split()[1])
        inv_freq = record16_inv_freq(hd, base).bfloat16()  # what model.bfloat16() leaves in the buffer
        freqs, cos, sin = eager_table(max(HASH_T), inv_freq)
        for t in ROWS:
            triples = [f"{a:04x}:{b:04x}:{c:04x}" for a, b, c in zip(bits(freqs[t]), bits(cos[t]), bits(sin[t]))]
            lines.append(f"row {hd} {base:.17g} {t} " + " ".join(triples))
        for T in HASH_T:
            lines.append(f"fnv {hd} {base:.17g} {T} {fnv1a64(table_bytes(freqs[:T])):016x}")
    open(out_file, "w").write("\n".join(lines) + "\n")
    print(f"rotary_eager_ref: {len(ROWS)} rows and {len(HASH_T)} table hashes per head_dim")


if __name__ == "__main__":
    main()
