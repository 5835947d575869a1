"""The sweep runner: every run of a spec as a task on Dask distributed, or in this process.

:func:`run_sweep` expands a spec (:mod:`experiments.sweep.spec`), skips the runs already
recorded in the store (same key: same parameters and code version), submits the others
to a Dask cluster -- a local cluster of one single-threaded worker process per core on
127.0.0.1 by default, or an existing scheduler (``scheduler="tcp://host:8786"``) -- or,
with ``workers=0``, runs them one after the other in this process (the same
:func:`~experiments.sweep.execute.execute` per run: what ``compare`` and ``demo`` use,
no cluster to start), and writes each run's rows as soon as it completes
(:mod:`experiments.sweep.store`: atomically, one file per run and table). The client
writes: workers need no shared file system, only the same code (and the workload
files, at the same paths).

* **Emulation runs** (``engine = "mininet"``) need root and one Mininet per machine: they
  ask for the worker resource ``mininet=1`` (the first local worker has it; on a
  cluster, start one worker per machine with ``--resources mininet=1``), and the engine
  holds the machine's Mininet lock while it runs (:mod:`emulate.mininet.lock`). A sweep
  with emulation runs and no root, or no worker offering the resource, is refused
  before anything runs.
* **Failures**: a run that raises is recorded with its error; a run whose worker dies
  (Dask's ``KilledWorker`` after the scheduler's allowed failures) is recorded as
  failed too. Neither stops the sweep.
* **Interruptions**: Ctrl-C or a lost scheduler stop the sweep; what was written is
  complete, nothing else is, and re-running the spec continues where it stopped.

A progress bar (tqdm, on stderr) shows runs done / failed / remaining and the time left.
"""
from __future__ import annotations

import logging
import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

from experiments.sweep.execute import execute, failed
from experiments.sweep.spec import Spec, emulated
from experiments.sweep.store import recorded, remove_partial, write_outcome


class SweepError(RuntimeError):
    """A sweep that cannot start (no root for emulation runs, no scheduler) or that lost
    its scheduler; ``setup`` errors exit with 2."""

    def __init__(self, message: str, *, setup: bool = True):
        super().__init__(message)
        self.setup = setup


@dataclass
class SweepReport:
    """What one invocation did: runs in the spec, skipped (already recorded), done,
    failed (label, error) and the wall time."""

    sweep: str
    out: str
    total: int
    skipped: int = 0
    done: int = 0
    failed: list = field(default_factory=list)
    seconds: float = 0.0
    workers: int = 0

    def to_json(self) -> dict:
        return {"sweep": self.sweep, "out": self.out, "runs": self.total,
                "skipped": self.skipped, "done": self.done,
                "failed": [{"label": lb, "run_key": k, "error": e}
                           for lb, k, e in self.failed],
                "seconds": self.seconds, "workers": self.workers}

    def format(self) -> str:
        where = f"on {self.workers} worker(s)" if self.workers else "in this process"
        lines = [f"sweep {self.sweep}: {self.total} runs, {self.skipped} already recorded, "
                 f"{self.done} done, {len(self.failed)} failed "
                 f"({self.seconds:.1f} s {where}); results in {self.out}"]
        for label, key, err in self.failed:
            lines.append(f"  failed {key} {label}: {err}")
        return "\n".join(lines)


def run_sweep(spec: Spec, out: str, *, scheduler: str | None = None,
              workers: int | None = None, progress: bool = True,
              retry_failed: bool = False, rerun: bool = False) -> SweepReport:
    """Run every run of ``spec`` not yet recorded in ``out``; the report.

    Parameters
    ----------
    spec : Spec
    out : str
        The results store (a folder; created).
    scheduler : str, optional
        Address of a running Dask scheduler; default: a LocalCluster on 127.0.0.1.
    workers : int, optional
        LocalCluster worker processes (default: one per core); 0: no Dask, every run in
        this process, one after the other (the same :func:`execute` per run; what
        ``compare`` and ``demo`` use: no cluster to start for a dozen runs).
    retry_failed : bool
        Also run again the runs recorded as failed.
    rerun : bool
        Run every run again, recorded or not (its rows are replaced).

    Raises
    ------
    SweepError
        Emulation runs without root or without a worker offering ``mininet``; the
        scheduler lost mid-way (``setup=False``).
    KeyboardInterrupt
        Ctrl-C: the runs written so far are complete.
    """
    t0 = time.perf_counter()
    if workers == 0 and scheduler:
        raise SweepError("workers = 0 runs the sweep in this process; it takes no "
                         "scheduler")
    runs = spec.runs()
    have = recorded(out, spec.name)
    todo = [r for r in runs if rerun or r.key not in have
            or (retry_failed and have[r.key] != "ok")]
    report = SweepReport(spec.name, out, len(runs), skipped=len(runs) - len(todo))
    emulations = [r for r in todo if emulated(r.engine)]
    if emulations and os.geteuid() != 0:
        e = emulations[0].engine
        raise SweepError(f"{len(emulations)} run(s) use the {e} engine, which needs root: "
                         f"run the sweep as root (sudo), or drop {e!r} from the spec's "
                         f"engines")
    os.makedirs(out, exist_ok=True)
    remove_partial(out, spec.name)
    if todo and workers == 0:
        _collect(out, spec.name, ((r, execute(r)) for r in todo), len(todo), report,
                 progress)
    elif todo:
        with _client(scheduler, workers) as client:
            info = client.scheduler_info()["workers"]
            report.workers = len(info)
            can_emulate = any(w.get("resources", {}).get("mininet") for w in info.values())
            if emulations and not can_emulate:
                raise SweepError("no worker of the cluster offers the resource mininet=1 "
                                 "that emulation runs need: start one worker per machine "
                                 "with `dask worker ADDRESS --resources mininet=1`")
            _collect(out, spec.name, _on_dask(client, spec, todo), len(todo), report,
                     progress)
    report.seconds = time.perf_counter() - t0
    return report


def completed_sweep(spec: Spec, out: str, **options):
    """An experiment's door: run ``spec`` into the store ``out`` (``run_sweep``'s
    ``options``; resumable) and return the store's DuckDB connection
    (:func:`~experiments.sweep.store.open_results`) once every run is recorded.

    Raises
    ------
    RuntimeError
        Some runs failed (each with its error, from the report).
    """
    from experiments.sweep.store import open_results
    report = run_sweep(spec, out, **options)
    if report.failed:
        raise RuntimeError("runs failed:\n" + report.format())
    return open_results(out)


def _on_dask(client, spec, todo):
    """Submit every run of ``todo`` to ``client``; yield ``(run, outcome)`` as they
    complete (a run whose worker died, or whose result cannot be read: failed)."""
    from distributed import as_completed
    from distributed.client import FutureCancelledError
    from distributed.scheduler import KilledWorker
    futures, submitted = {}, []
    for r in todo:
        f = client.submit(execute, r, key=f"run-{spec.name}-{r.key}", pure=False,
                          resources={"mininet": 1} if emulated(r.engine) else None)
        futures[f.key] = r
        submitted.append(f)
    for fut in as_completed(submitted):
        r = futures[fut.key]
        try:
            yield r, fut.result()
        except KilledWorker as e:
            yield r, failed(r, f"worker died running it: {e}")
        except (FutureCancelledError, OSError) as e:
            why = " ".join(f"{type(e).__name__}: {e}".split())
            raise SweepError(f"lost the Dask scheduler ({why}); the runs written so far "
                             f"are complete: run the sweep again to continue",
                             setup=False) from None
        except Exception as e:  # noqa: BLE001 - e.g. the run could not be unpickled
            yield r, failed(r, f"{type(e).__name__}: {e}")


def _collect(out, sweep, outcomes, total, report, progress):
    """Write every ``(run, outcome)`` of ``outcomes`` as it comes (the store's files,
    atomically), count it in ``report``, advance the progress bar."""
    from tqdm import tqdm
    bar = tqdm(total=total, unit="run", file=sys.stderr, disable=not progress, desc=sweep,
               dynamic_ncols=True)
    try:
        for r, outcome in outcomes:
            write_outcome(out, sweep, outcome)
            if outcome.run["status"] == "ok":
                report.done += 1
            else:
                report.failed.append((r.label, r.key, outcome.run["error"]))
            bar.set_postfix(done=report.done, failed=len(report.failed),
                            remaining=total - report.done - len(report.failed),
                            refresh=False)
            bar.update(1)
    finally:
        bar.close()


@contextmanager
def _client(scheduler: str | None, workers: int | None):
    """A Dask client of an existing scheduler, or of a local cluster on 127.0.0.1 (one
    single-threaded worker process per core, the first of them offering ``mininet=1``)."""
    # the client's own logs (reconnection attempts with tracebacks) are not for users:
    # what went wrong reaches them as one SweepError line. Left silenced: the client's
    # event loop thread still logs while and after it closes. (Importing distributed
    # sets its loggers' levels: import it first.)
    import distributed  # noqa: F401
    for name in ("distributed", "distributed.client"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    with _connected(scheduler, workers) as client:
        yield client


@contextmanager
def _connected(scheduler: str | None, workers: int | None):
    import dask
    from distributed import Client, Nanny, Scheduler, SpecCluster
    if scheduler:
        try:
            client = Client(scheduler, timeout="10s")
        except (OSError, TimeoutError) as e:
            raise SweepError(f"cannot reach the Dask scheduler {scheduler}: "
                             f"{' '.join(str(e).split())}") from None
        try:
            yield client
        finally:
            client.close()
        return
    n = workers or os.cpu_count() or 1
    with dask.config.set({"distributed.scheduler.allowed-failures": 1,
                          # not daemonic: an emulation run starts processes of its own
                          "distributed.worker.daemon": False}):
        cluster = SpecCluster(scheduler={"cls": Scheduler, "options": {
            "host": "127.0.0.1", "port": 0, "dashboard": False,
            "dashboard_address": "127.0.0.1:0"}},
            workers={f"worker-{i}": {"cls": Nanny, "options": {
                "nthreads": 1, "host": "127.0.0.1", "dashboard": False,
                "silence_logs": logging.CRITICAL,
                # one Mininet per machine: one local worker takes emulation runs
                "resources": {"mininet": 1} if i == 0 else {}}} for i in range(n)},
            silence_logs=logging.CRITICAL)
        try:
            client = Client(cluster)
            try:
                yield client
            finally:
                client.close()
        finally:
            cluster.close()
