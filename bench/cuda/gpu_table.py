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


def rows(path):
    """The table rows of one file; ValueError with the reason if it is not a whole benchmark
    JSON of these programs (a run stopped at its time limit leaves a truncated file)."""
    try:
        with open(path) as f:
            benchmarks = json.load(f)["benchmarks"]
        return [row(b) for b in benchmarks
                if b.get("run_type", "iteration") == "iteration" and "error_occurred" not in b]
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError,
            ZeroDivisionError) as e:
        raise ValueError(f"{path}: not a complete octet_cuda_bench / octet_cuda_kernel_bench "
                         f"JSON ({type(e).__name__}: {e})") from None


def main(paths):
    if not paths:
        print("usage: gpu_table.py BENCHMARK.json [...]", file=sys.stderr)
        return 2
    try:
        table = [r for path in paths for r in rows(path)]
    except ValueError as e:
        print(f"gpu_table.py: {e}", file=sys.stderr)
        return 1
    print("| call | type | size | time (us) | GB/s of fp32 | fraction of copy bound |")
    print("|---|---|---|---|---|---|")
    print("\n".join(table))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
