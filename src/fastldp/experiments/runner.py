"""The family-neutral runner: resumable grids of cells, a bounded process pool, seed streams.

Every family's runner (``fastldp.experiments.<family>.runner``) turns a spec
into cells and a cell into rows; this module does the rest, the same way for
all of them:

- :func:`run_grid` first checks what it can (:mod:`.preflight`: method names,
  data paths, the family's own checks) and refuses to start a run that
  cannot succeed; it skips rows already in the results table (resume), drops
  failed rows first when asked, writes the manifest, shows the progress bar
  and feeds the pool;
- :func:`run_tasks` runs tasks in a bounded pool of spawned processes (at
  most ``2 * workers`` in flight, so memory stays flat whatever the grid);
- :func:`seed_streams` makes one :class:`numpy.random.SeedSequence` per named
  random stream from the trial's seed and the configuration fields that
  stream depends on, so a row never depends on which other cells run, in
  which order, or on the number of workers.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import multiprocessing
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .preflight import preflight
from .progress import progress_bar
from .spec import Spec

__all__ = ["RunSummary", "run_grid", "run_tasks", "seed_streams"]

_MAX_MESSAGE = 600


def seed_streams(config: dict, seed: int, fields: dict, prefix: tuple = ()):
    """Return ``stream(name, tag="") -> SeedSequence`` for one configuration and trial.

    ``fields[name]`` lists the configuration keys stream ``name`` depends on;
    ``tag`` (a method family, say) separates streams that must differ
    between methods. The stream is the trial's seed with a spawn key hashed
    from ``[*prefix, name, tag, {field: value}]``.
    """

    def stream(name: str, tag: str = "") -> np.random.SeedSequence:
        values = {f: config[f] for f in fields[name]}
        text = json.dumps([*prefix, name, tag, values], sort_keys=True, default=list)
        words = np.frombuffer(hashlib.sha256(text.encode()).digest()[:16], dtype="<u4")
        return np.random.SeedSequence(seed, spawn_key=tuple(int(w) for w in words))

    return stream


def _message(exc: BaseException, where: str = "") -> str:
    text = f"{where}{type(exc).__name__}: {exc}".replace("\r", " ").replace("\n", " | ")
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 3] + "..."


def _resolve_paths(table: dict, data_dir) -> dict:
    out = dict(table)
    for key, value in table.items():
        if key == "path" or key.endswith("_path"):
            path = Path(os.path.expanduser(str(value)))
            if not path.is_absolute() and data_dir is not None:
                path = Path(data_dir) / path
            out[key] = str(path)
    return out


@dataclass(frozen=True)
class RunSummary:
    """What a family's ``run`` did (see :func:`run_grid`)."""

    table: Path
    cells: int          # cells in the grid
    cells_run: int      # cells that had missing rows
    rows_written: int
    failures: int       # failed rows written by this run
    seconds: float
    failed_in_table: int    # failed rows of this grid in the table after the run (this run's too)

    @property
    def failed(self) -> int:
        """Failed rows of this grid in the table, earlier runs' included.

        The grid is complete only when this is 0; the CLI exits non-zero otherwise.
        """
        return self.failed_in_table  # this run's failed rows are in the table too

    def __str__(self) -> str:
        skipped = self.cells - self.cells_run
        text = (f"{self.rows_written} rows written to {self.table} ({self.cells_run} of "
                f"{self.cells} cells run, {skipped} already complete; {self.failures} failed "
                f"rows) in {self.seconds:.1f} s")
        if self.failed_in_table > self.failures:
            text += (f"; the table holds {self.failed_in_table} failed rows of this grid "
                     f"(--retry-failures runs them again)")
        return text


def _default_threads(workers: int) -> int:
    return max(1, (os.cpu_count() or 1) // max(1, workers))


def _run_batch(task, batch, n_threads, data_dir) -> tuple[list, int]:
    """Run ``task`` on each ``(cell, missing)`` of ``batch`` in order, in one process."""
    rows: list = []
    for cell, missing in batch:
        rows.extend(task(cell, missing, n_threads, data_dir))
    return rows, len(batch)


def run_grid(spec: Spec, out: Path, table, cells, task, *, workers: int, threads, data_dir,
             progress: bool, retry_failures: bool, group=None, methods=None,
             check=None) -> RunSummary:
    """Run the rows of ``cells`` missing from ``table`` and append them.

    ``task(cell, methods, n_threads, data_dir) -> rows`` computes one cell's
    missing methods. Shared by every experiment family's runner: resume
    (rows already present are skipped; with ``retry_failures`` failed rows
    are dropped first), the manifest, the progress bar and the pool.

    ``group(cell) -> key``, when given, sends the cells with one key to one
    worker, in grid order: a family whose cells share expensive work (the
    same data at several budgets, say) then does it once per key and worker.
    Rows never depend on it; only the time does.

    Before anything is written, :func:`~fastldp.experiments.preflight.preflight`
    checks the spec's methods against ``methods`` (every name the family
    knows; ``None`` skips it), every data path of the cells, the output
    folder, and the family's hook ``check(spec, cells, data_dir) -> list of
    str``; it raises one ``ValueError`` listing every problem.
    """
    preflight(spec, cells, data_dir=data_dir, methods=methods, check=check, out=out,
              table=table)
    t0 = time.perf_counter()
    if retry_failures and table.path.exists():
        table.drop_failures()
    done = table.prepare()
    _write_manifest(out, spec)
    pending = [(cell, missing) for cell in cells
               if (missing := tuple(m for m in cell.methods if cell.key(m) not in done))]
    n_threads = threads or spec.threads or _default_threads(workers)
    data_dir = None if data_dir is None else str(data_dir)

    written = failures = 0
    bar = progress_bar(len(pending), spec.name, enabled=progress)

    def record(result):
        nonlocal written, failures
        rows, n_cells = result
        table.append(rows)
        written += len(rows)
        failures += sum(1 for r in rows if r["failure"])
        bar.update(n_cells)

    batches: dict = {}
    for i, item in enumerate(pending):
        batches.setdefault(i if group is None else group(item[0]), []).append(item)
    try:
        run_tasks(_run_batch, [(task, batch, n_threads, data_dir) for batch in batches.values()],
                  workers, record)
    finally:
        bar.close()
    keys = {cell.key(m) for cell in cells for m in cell.methods}
    failed_in_table = sum(1 for key in table.failed_keys() if key in keys)
    return RunSummary(table.path, len(cells), len(pending), written, failures,
                      time.perf_counter() - t0, failed_in_table)


def run_tasks(task, arguments, workers: int, record) -> None:
    """Run ``task(*args)`` for each tuple in ``arguments``; pass each result to ``record``.

    Serial when ``workers == 1`` (or there is at most one task), else in a
    pool of ``workers`` spawned processes (no fork after OpenMP) with at
    most ``2 * workers`` tasks in flight, so memory stays flat whatever the
    grid size; results are recorded in completion order. On any error or
    interrupt the queued tasks are cancelled.
    """
    if workers == 1 or len(arguments) <= 1:
        for args in arguments:
            record(task(*args))
        return
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        queue = iter(arguments)
        running = set()

        def submit_next() -> bool:
            args = next(queue, None)
            if args is None:
                return False
            running.add(pool.submit(task, *args))
            return True

        for _ in range(2 * workers):
            if not submit_next():
                break
        try:
            while running:
                finished, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
                for fut in finished:
                    running.discard(fut)
                    record(fut.result())
                    submit_next()
        except BaseException:
            for fut in running:
                fut.cancel()
            raise


def _write_manifest(out: Path, spec: Spec) -> None:
    from .._version import __version__

    manifest = {
        "spec": spec.name, "source": spec.source, "quick": spec.quick,
        "description": spec.description, "methods": list(spec.methods),
        "seeds": list(spec.seeds), "fixed": spec.fixed, "grids": list(spec.grids),
        "report": spec.report, "fastldp": __version__,
    }
    path = out / "manifest.json"
    tmp = out / "manifest.json.tmp"
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True, default=list) + "\n")
    os.replace(tmp, path)
