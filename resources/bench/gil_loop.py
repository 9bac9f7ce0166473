#!/usr/bin/python3
# The GIL, measured: the same CPU-bound pure-Python loop split over N threads or N processes,
# timed from the first worker's start to the last one's end. Prints one JSON object:
#   {"mode": "threads", "workers": 2, "iterations": 2000000, "seconds": 0.41, "cpus": 2}
# Run: python3 gil_loop.py --mode threads --workers 2 --iterations 2000000
# (ParaLab's ```bench {"kind": "gil"} step runs it; see tests/engine/tst_teach_gil.cpp.)
import argparse
import json
import multiprocessing
import os
import sys
import threading
import time


def spin(iterations):
    """A linear congruential generator stepped `iterations` times: bytecode only, no I/O, no
    call that releases the GIL, so a thread running it holds the lock the whole time."""
    x = 1
    for _ in range(iterations):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
    return x


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=["threads", "processes"], required=True)
    parser.add_argument("--workers", type=int, required=True)
    parser.add_argument("--iterations", type=int, required=True, help="in all, split evenly")
    a = parser.parse_args()
    if a.workers < 1 or a.iterations < a.workers:
        print("workers: at least 1, and at most the iterations", file=sys.stderr)
        return 2
    share = [a.iterations // a.workers + (1 if i < a.iterations % a.workers else 0)
             for i in range(a.workers)]
    if a.mode == "threads":
        workers = [threading.Thread(target=spin, args=(n,)) for n in share]
    else:
        # fork: the child starts with the parent's interpreter, no re-import (Linux's default
        # before Python 3.14; named so the measurement does not change with the version).
        context = multiprocessing.get_context("fork")
        workers = [context.Process(target=spin, args=(n,)) for n in share]
    start = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    seconds = time.perf_counter() - start
    print(json.dumps({"mode": a.mode, "workers": a.workers, "iterations": a.iterations,
                      "seconds": seconds, "cpus": len(os.sched_getaffinity(0))}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
