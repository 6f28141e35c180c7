"""Relation input conversion: long format (identity, row, col) against CSR and sequence.

Prints the best of a few runs of ``JPRS.relation_sets`` on the same
population (200,000 identities x about 5 relations by default) in every
input form. Run from the repository root: ``python bench/long_format.py``
(``--n 20000`` for a quick run). pandas and pyarrow rows are skipped when
those packages are missing. The last line is README's figure (Scale-out):
the fastest and slowest long-format conversion from memory (arrays, pandas,
pyarrow; the Parquet row, which includes reading the file, is left out).
It times the installed fastldp (see bench/README.md for timing a working
tree).
"""

import argparse
import os
import tempfile
import time

import numpy as np
import scipy.sparse as sp

from fastldp.relations import JPRS


def best_ms(fn, reps=5):
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200_000, help="identities")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    n, d = args.n, 1000
    p = d * d
    holder = np.repeat(np.arange(n, dtype=np.int64), rng.integers(1, 10, n))  # ~5 each
    key = np.unique(holder * p + rng.integers(0, p, holder.shape[0]))  # drop repeated pairs
    holder, enc = key // p, key % p
    indptr = np.concatenate(([0], np.cumsum(np.bincount(holder, minlength=n))))
    csr = sp.csr_matrix((np.ones(enc.shape[0]), enc, indptr), shape=(n, p))
    seq = np.split(np.stack([enc // d, enc % d], 1), indptr[1:-1])
    perm = rng.permutation(enc.shape[0])
    ident, row, col = holder[perm], enc[perm] // d, enc[perm] % d
    sorted_lines = (holder, enc // d, enc % d)
    hashed = np.unique(rng.integers(0, 2**64 - 1, 2 * n, dtype=np.uint64))[:n]
    hashed_ident = rng.permutation(hashed)[ident]  # 64-bit identities, as hashed user ids
    population = rng.permutation(n)
    mech = JPRS(shape=(d, d), k=9, s=10, codebook_seed=1, n_threads=1)
    print(f"{n} identities, {enc.shape[0]} relations (mean {enc.shape[0] / n:.2f}), p = {p}")
    rows = [
        ("CSR matrix", lambda: mech.relation_sets(csr)),
        ("sequence of (m, 2) arrays", lambda: mech.relation_sets(seq)),
        ("long, lines sorted", lambda: mech.relation_sets(sorted_lines)),
        ("long, lines shuffled", lambda: mech.relation_sets((ident, row, col))),
        ("long, shuffled, 64-bit identities", lambda: mech.relation_sets((hashed_ident, row, col))),
        ("long, shuffled, identities= (shuffled)",
         lambda: mech.relation_sets((ident, row, col), identities=population)),
    ]
    try:
        import pandas as pd

        df = pd.DataFrame({"identity": ident, "row": row, "col": col})
        rows.append(("long, pandas DataFrame", lambda: mech.relation_sets(df)))
    except ImportError:
        pass
    tmp = None
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.table({"identity": ident, "row": row, "col": col})
        tmp = tempfile.NamedTemporaryFile(suffix=".parquet", delete=False)
        tmp.close()
        pq.write_table(table, tmp.name)
        rows.append(("long, pyarrow Table", lambda: mech.relation_sets(table)))
        rows.append(("long, Parquet file (read included)", lambda: mech.relation_sets(tmp.name)))
    except ImportError:
        pass
    long_ms = []
    try:
        for name, fn in rows:
            ms = best_ms(fn)
            print(f"  {name:40s} {ms:8.1f} ms")
            if name.startswith("long") and "Parquet" not in name:
                long_ms.append(ms)
    finally:
        if tmp is not None:
            os.unlink(tmp.name)
    print("README line (Scale-out), from this run:")
    print(f"{n:,} identities convert in {min(long_ms):.0f}-{max(long_ms):.0f} ms")


if __name__ == "__main__":
    main()
