#!/usr/bin/python3
"""PyTorch (Debian's torch) latency of a torchvision model at batch 1.

Usage: cpu_torch_bench.py MODEL THREADS RUNS   (MODEL: resnet18|resnet50|mobilenet_v2)
Prints the median run time in seconds after warm-up. Benchmark only.
"""
import statistics
import sys
import time

import torch
import torchvision


def main():
    name, threads, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    model = getattr(torchvision.models, name)(weights=None).eval()
    x = torch.randn(1, 3, 224, 224)
    with torch.inference_mode():
        for _ in range(3):
            model(x)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            model(x)
            times.append(time.perf_counter() - start)
    print(statistics.median(times))


if __name__ == "__main__":
    main()
