#!/usr/bin/env python3
"""The rates file of the step model (impl/backend/predict.h, build/bench/kernels --count=1) from one
GPU report (ci/bundle/run_gpu_report.sh's folder), so that a GPU's step can be predicted from its
own measurements:

    bench/gpu_rates.py REPORT_DIR OUT.csv

- gemm, keyed M x N x K of C (M, N) = A (M, K) B (K, N), the mean where several GEMMs share a key:
  bf16 output: cuBLAS at every GEMM shape of the step as our backend issues them, timed by
  bench/kernels in the same run as the step (kernels-softcap.csv's ceiling.gemm_at rows, column-major
  m x n x k, so M x N x K = n x m x k), and its 8192^3 ceiling row; fp32 output (the weight
  gradients), which bench/kernels does not time alone: PyTorch's a @ b at the step's shapes
  (peers-gpu.csv, m x k x n, so M x N x K = m x n x k).
- copy: the device-to-device copy ceiling of kernels-softcap.csv.
- attn_fwd, attn_bwd: our tensor-core attention at the longest T of attention-window.csv.
- orthogonalize: our batched Newton-Schulz row of kernels-softcap.csv (the model's only measurement
  of it, so its residual there is zero by construction).
- device: the GPU's short name and memory, from info.log's nvidia-smi line.
Every row names its file and what it is. Bad input: one line naming the file and the fault, exit 1,
and OUT is not written."""
import csv
import os
import sys


class Bad(Exception):
    pass


def rows_of(path):
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except OSError as e:
        raise Bad("%s: cannot read: %s" % (path, e.strerror))


def number(path, row, field):
    try:
        v = float(row[field])
    except (KeyError, TypeError, ValueError):
        raise Bad("%s: row %r has no number in column '%s'" % (path, row.get("name") or row.get("what"), field))
    if not v > 0:
        raise Bad("%s: row %r: '%s' is %g, not a positive number" % (path, row.get("name") or row.get("what"), field, v))
    return v


def three(path, what, text):
    try:
        a, b, c = (int(x) for x in text.split()[0].split("x"))
    except (AttributeError, IndexError, ValueError):
        raise Bad("%s: gemm row %r: shape '%s' is not AxBxC" % (path, what, text))
    return a, b, c


def keyed(times, src):
    """Rows from {(M, N, K, out): [ms, ...]}, each the mean of its GEMMs."""
    return [("gemm", "%dx%dx%d %s" % key, sum(v) / len(v), "ms",
             src + ("" if len(v) == 1 else "; the mean of %d GEMMs of this shape" % len(v)) + ")")
            for key, v in sorted(times.items())]


def torch_f32_gemm_rows(report):
    path = os.path.join(report, "peers-gpu.csv")
    times = {}
    for row in rows_of(path):
        if row.get("part") == "gemm" and (row.get("note") or "").startswith("fp32"):
            m, k, n = three(path, row.get("what"), row.get("shape"))
            times.setdefault((m, n, k, "f32"), []).append(number(path, row, "median_ms"))
    if not times:
        raise Bad("%s: no gemm rows with fp32 output" % path)
    return keyed(times, "%s (torch a @ b, bf16 operands, fp32 output, median" % os.path.basename(path))


def kernels_rows(report):
    path = os.path.join(report, "kernels-softcap.csv")
    by_name = {}
    for row in rows_of(path):
        by_name.setdefault(row.get("name"), []).append(row)
    base = os.path.basename(path)

    def one(name):
        if name not in by_name:
            raise Bad("%s: no row '%s'" % (path, name))
        return by_name[name][0]

    times = {}
    for row in by_name.get("ceiling.gemm_at", []) + [one("ceiling.gemm")]:
        m, n, k = three(path, row["name"], row["shape"])
        times.setdefault((n, m, k, "bf16"), []).append(number(path, row, "median_ms"))
    ortho = one("optimizer:orthogonalize")
    return keyed(times, "%s (cuBLAS bf16 GEMM as our backend issues it, timed by bench/kernels" % base) + [
            ("copy", "device-to-device", number(path, one("ceiling.copy"), "gbs"), "GB/s",
             "%s (the device copy ceiling, read + write bytes)" % base),
            ("orthogonalize", ortho["shape"], number(path, ortho, "gflops") / 1e3, "TFLOP/s",
             "%s (our batched NS, the only measurement: its residual is zero by construction)" % base)]


def attention_rows(report):
    path = os.path.join(report, "attention-window.csv")
    mma = [r for r in rows_of(path) if r.get("impl") == "mma"]
    out = []
    for kind in ("fwd", "bwd"):
        rows = [r for r in mma if r.get("pass") == kind]
        if not rows:
            raise Bad("%s: no mma %s rows" % (path, kind))
        last = max(rows, key=lambda r: number(path, r, "T"))
        out.append(("attn_" + kind, "T %d window %s" % (int(number(path, last, "T")), last.get("window")),
                    number(path, last, "tflops"), "TFLOP/s",
                    "%s (bench/attention_gpu, our tensor-core kernel, admitted pairs)" % os.path.basename(path)))
    return out


def device_row(report):
    """The device row (the GPU's short name, its memory) from info.log's nvidia-smi query line
    "NVIDIA H200, 580.159.04, 143771 MiB, ...", and the GPU's name with its driver."""
    path = os.path.join(report, "info.log")
    try:
        with open(path) as f:
            line = next((ln for ln in f if ln.startswith("NVIDIA ") and ln.count(",") >= 3), None)
    except OSError as e:
        raise Bad("%s: cannot read: %s" % (path, e.strerror))
    if line is None:
        raise Bad("%s: no nvidia-smi query line (NVIDIA <name>, <driver>, <memory> MiB, ...)" % path)
    name, driver, memory = (x.strip() for x in line.split(",")[:3])
    try:
        mib = float(memory.split()[0])
    except (IndexError, ValueError):
        raise Bad("%s: memory '%s' is not '<N> MiB'" % (path, memory))
    short = name.split()[1]  # NVIDIA H200 -> H200, NVIDIA H100 80GB HBM3 -> H100
    gpu = "%s, driver %s" % (name, driver)
    return ("device", short, mib, "MiB", "%s (nvidia-smi: %s)" % (os.path.basename(path), gpu)), gpu


def main(argv):
    if len(argv) != 3 or argv[1].startswith("-"):
        print("usage: gpu_rates.py REPORT_DIR OUT.csv (the head of this script says more)", file=sys.stderr)
        return 2
    report, out = argv[1], argv[2]
    try:
        device, gpu = device_row(report)
        rows = [device] + kernels_rows(report) + torch_f32_gemm_rows(report) + attention_rows(report)
    except Bad as e:
        print("gpu_rates.py: error: %s" % e, file=sys.stderr)
        return 1
    tmp = out + ".tmp"
    try:
        with open(tmp, "w") as f:
            f.write("# The rates of the step model (build/bench/kernels --count=1), made by bench/gpu_rates.py from\n"
                    "# the GPU report in %s (%s); `source` names the file of each.\n" % (report, gpu or "GPU not named"))
            f.write("# gemm keys: M x N x K of C (M, N) = A (M, K) B (K, N) in row-major terms, bf16 operands, and the\n"
                    "# output type (bf16, or f32).\n")
            f.write("kind,key,value,unit,source\n")  # the loader splits at the first four commas
            for kind, key, value, unit, source in rows:
                f.write("%s,%s,%.6g,%s,%s\n" % (kind, key, value, unit, source))
        os.replace(tmp, out)
    except OSError as e:
        if os.path.exists(tmp):
            os.remove(tmp)
        print("gpu_rates.py: error: %s: cannot write: %s" % (out, e.strerror), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
