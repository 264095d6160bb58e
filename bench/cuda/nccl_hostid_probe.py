"""Can several NCCL ranks share one GPU? NCCL refuses two ranks of one host on one device
("Duplicate GPU detected"); ranks that each claim another host (NCCL_HOSTID) may still talk over
the socket transport. This probe runs `world` ranks on cuda:0 through PyTorch's NCCL backend:

    python3 nccl_hostid_probe.py same 2       # one host id: expected to fail
    python3 nccl_hostid_probe.py distinct 2   # NCCL_HOSTID per rank, NCCL_SOCKET_IFNAME=lo

Each rank prints whether a 4 MiB allreduce gave the exact sum, and its time.
"""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, world, mode, port):
    os.environ["NCCL_SOCKET_IFNAME"] = "lo"
    if mode == "distinct":
        os.environ["NCCL_HOSTID"] = f"octet-probe-host-{rank}"
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    try:
        x = torch.full((1 << 20,), float(rank + 1), device="cuda")
        dist.all_reduce(x)
        torch.cuda.synchronize()
        want = world * (world + 1) / 2
        start = time.perf_counter()
        for _ in range(10):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        seconds = (time.perf_counter() - start) / 10
        exact = x[0].item() == want * world ** 10
        print(f"{mode} rank {rank}: ok, sum {'exact' if exact else 'WRONG'}, "
              f"4 MiB allreduce {seconds * 1e3:.2f} ms", flush=True)
    except Exception as e:  # the refusal is the answer of the "same" mode
        first = str(e).splitlines()[0][:200]
        print(f"{mode} rank {rank}: FAILED {type(e).__name__}: {first}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    mode, world = sys.argv[1], int(sys.argv[2])
    port = 29500 + world + (10 if mode == "same" else 0)
    mp.spawn(worker, args=(world, mode, port), nprocs=world, join=True)
