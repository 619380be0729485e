#!/usr/bin/python3
"""The reading pipeline beside the libraries a user would pick instead
(`make bench-peers`): numpy.loadtxt (Debian's python3-numpy, one thread) and,
where it is installed, PyTorch's DataLoader (python3-torch, skipped with a
message where absent), on the same CSV files as quern's pipeline
(bench_reading_pipeline --data DIR --pipeline-only), in interleaved rounds.
Prints each one's examples/s (medians) and quern / peer.

Runs with Debian's /usr/bin/python3 (where python3-numpy installs).
Usage: bench/peers.py BUILD_DIR [--mb 100] [--files 32] [--rounds 3]
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def write_files(directory, mb, files, seed=1):
    """CSV files like quern's benchmark writes: header x1,x2,y, then rows
    y = 3 x1 - 2 x2 + 1 + noise with six decimals (about 28 bytes a row)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    rows = int(mb * 1e6 / 28.0 / files) + 1
    paths = []
    for f in range(files):
        x = rng.uniform(-1.0, 1.0, size=(rows, 2)).astype(np.float32)
        y = 3 * x[:, 0] - 2 * x[:, 1] + 1 + rng.normal(0, 0.1, rows).astype(np.float32)
        path = os.path.join(directory, "data_%d.csv" % f)
        np.savetxt(path, np.column_stack([x, y]), fmt="%.6f", delimiter=",",
                   header="x1,x2,y", comments="")
        paths.append(path)
    return paths, rows * files


def run_quern(bench, directory):
    out = subprocess.run([bench, "--data", directory, "--pipeline-only", "--rounds", "1"],
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        sys.exit("peers: %s failed:\n%s%s" % (bench, out.stdout, out.stderr))
    m = re.search(r"\): ([0-9.]+) examples/s", out.stdout)
    if not m:
        sys.exit("peers: no rate in the output of %s:\n%s" % (bench, out.stdout))
    return float(m.group(1))


def run_numpy(paths, rows):
    import numpy as np

    t0 = time.perf_counter()
    n = 0
    for p in paths:
        n += len(np.loadtxt(p, delimiter=",", skiprows=1, dtype=np.float32))
    secs = time.perf_counter() - t0
    if n != rows:
        sys.exit("peers: numpy read %d rows, not %d" % (n, rows))
    return n / secs


def run_torch(paths, rows, workers=2, batch=128):
    import torch
    from torch.utils.data import DataLoader, IterableDataset, get_worker_info

    class CsvRows(IterableDataset):
        def __iter__(self):
            info = get_worker_info()
            mine = paths if info is None else paths[info.id::info.num_workers]
            for p in mine:
                with open(p) as f:
                    next(f)
                    for line in f:
                        a, b, c = line.split(",")
                        yield torch.tensor([float(a), float(b), float(c)])

    t0 = time.perf_counter()
    n = 0
    for b in DataLoader(CsvRows(), batch_size=batch, num_workers=workers):
        n += len(b)
    secs = time.perf_counter() - t0
    if n != rows:
        sys.exit("peers: the DataLoader gave %d rows, not %d" % (n, rows))
    return n / secs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", help="quern's build directory (with bench/)")
    ap.add_argument("--mb", type=float, default=100, help="total size of the CSV files")
    ap.add_argument("--files", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    bench = os.path.join(a.build, "bench", "bench_reading_pipeline")
    if not os.access(bench, os.X_OK):
        sys.exit("peers: %s is not built (make build)" % bench)
    try:
        import numpy  # noqa: F401
    except ImportError:
        sys.exit("peers: numpy is missing: install Debian's python3-numpy "
                 "(tools/install-deps.sh --peers)")
    have_torch = True
    try:
        import torch  # noqa: F401
    except ImportError:
        have_torch = False
        print("peers: PyTorch is not installed (Debian's python3-torch): its "
              "DataLoader is left out")

    directory = tempfile.mkdtemp(prefix="quern_peers_")
    try:
        paths, rows = write_files(directory, a.mb, a.files)
        print("wrote %d files, %d rows to %s" % (len(paths), rows, directory))
        runs = {"quern": lambda: run_quern(bench, directory),
                "numpy.loadtxt": lambda: run_numpy(paths, rows)}
        if have_torch:
            runs["torch DataLoader"] = lambda: run_torch(paths, rows)
        names = list(runs)
        rates = {k: [] for k in names}
        ratios = {k: [] for k in names if k != "quern"}
        run_numpy(paths, rows)  # warms the page cache for everyone
        for r in range(a.rounds):
            got = {}
            for k in names[r % len(names):] + names[:r % len(names)]:
                got[k] = runs[k]()
            for k in names:
                rates[k].append(got[k])
            for k in ratios:
                ratios[k].append(got["quern"] / got[k])
            print("round %d: " % (r + 1) +
                  ", ".join("%s %.0f" % (k, got[k]) for k in names) + " examples/s")
        for k in names:
            print("%-18s %12.0f examples/s (median of %d)" % (k, statistics.median(rates[k]),
                                                         a.rounds))
        for k in ratios:
            print("quern / %-12s %6.2fx (median of the rounds' ratios)"
                  % (k, statistics.median(ratios[k])))
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
