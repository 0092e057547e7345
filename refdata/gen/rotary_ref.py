#!/usr/bin/python3
"""Record #16's rotary frequencies as torch computes them, for every table the presets use.

usage: rotary_ref.py LIST OUT_FILE
LIST is build/dump_refmodel's rotary_bf16.txt ("head_dim base" per line). OUT_FILE receives, per
table and pair i < head_dim/2, "head_dim base i fp32 bf16": the bits (hex) of the fp32 inv_freq
buffer of the record's Rotary.__init__ and of the same buffer after model.bfloat16().
"""
import sys

import torch

from ref_model import record16_inv_freq


def main():
    list_file, out_file = sys.argv[1], sys.argv[2]
    lines = [f"# torch {torch.__version__}: (1 / base) ** (torch.arange(0, head_dim, 2) / head_dim), then .bfloat16()",
             "# head_dim base i fp32_bits bf16_bits"]
    for row in open(list_file):
        hd, base = int(row.split()[0]), float(row.split()[1])
        f32 = record16_inv_freq(hd, base)
        bf16 = f32.bfloat16()
        assert f32.dtype == torch.float32
        for i, (a, b) in enumerate(zip(f32.view(torch.int32).tolist(), bf16.view(torch.int16).tolist())):
            lines.append(f"{hd} {base:.17g} {i} {a & 0xFFFFFFFF:08x} {b & 0xFFFF:04x}")
    open(out_file, "w").write("\n".join(lines) + "\n")
    print(f"rotary_ref: {len(lines) - 2} frequencies")


if __name__ == "__main__":
    main()
