"""Markdown table of octet_cuda_bench / octet_cuda_kernel_bench JSON (Google Benchmark's
--benchmark_out): per case the time, GB/s of fp32 input, and the fraction of the device-to-device
copy bound measured in the same run (copy time / codec time, i.e. 1 / vs_copy).

    python3 bench/cuda/gpu_table.py gpu-results/octet_cuda_bench.json [more.json ...]
"""
import json
import sys

TYPES = {"1": "dynamic", "6": "dynamic4"}
SIZES = {"262144": "1 MiB", "8388608": "32 MiB", "67108864": "256 MiB"}


def row(b):
    name = b["name"].split("/")
    fields = dict(part.split(":", 1) for part in name[1:] if ":" in part)
    what = name[0].removeprefix("BM_")
    detail = TYPES.get(fields.get("type"), fields.get("type", ""))
    if "sr_or_acc" in fields and fields["sr_or_acc"] == "1":
        detail += " (stochastic)" if what.startswith("Encode") else " (accumulate)"
    if "ranks" in fields:
        detail += f", {fields['ranks']} ranks, " + ["reduce", "reduce then encode", "fused"][int(fields["work"])]
    us = b["real_time"] if b["time_unit"] == "us" else b["real_time"] / 1e3
    gbps = b["bytes_per_second"] / 1e9
    bound = 1.0 / b["vs_copy"]
    return f"| {what} | {detail} | {SIZES.get(fields['n'], fields['n'])} | {us:.1f} | {gbps:.0f} | {bound:.2f} |"


def main(paths):
    print("| call | type | size | time (us) | GB/s of fp32 | fraction of copy bound |")
    print("|---|---|---|---|---|---|")
    for path in paths:
        with open(path) as f:
            for b in json.load(f)["benchmarks"]:
                if b.get("run_type", "iteration") == "iteration" and "error_occurred" not in b:
                    print(row(b))


if __name__ == "__main__":
    main(sys.argv[1:])
