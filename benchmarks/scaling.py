"""Trials per minute with 1, 2 and 4 worker processes sharing one study, per storage; the storage's share.

Two modes, each a grid of storages x worker counts:

- ``real``: the search on credit-g (the families and 5 folds given), published as a fit publishes it,
  run by ``automl.search.worker.run_worker`` in each of W fresh processes until the study holds ``--trials``
  started trials. This is the trial rate a user sees.
- ``null``: the same storage traffic per trial (the real space sampled by TPE, a user attribute and a
  report per fold, pruning asked) without fitting anything: the ceiling the storage and the sampler put
  on the trial rate, whatever the models cost.

Each worker process times every call into the storage (outermost calls only; the heartbeat thread
counted apart) and into the sampler. Trials per minute come from the trials' own start and end times;
a share is the time in those calls over workers x that window (wall time: with more workers than cores
it includes waiting for a core).
For PostgreSQL the peak number of connections to the database is read from ``pg_stat_activity``.

    .venv/bin/python benchmarks/scaling.py --csv benchmarks/results/scaling.csv
    .venv/bin/python benchmarks/scaling.py --modes null --storages postgresql --workers 1 2 4 8

Needs a quiet machine (it measures throughput). PostgreSQL: the local server of ``--postgres``.
"""

import argparse
import concurrent.futures
import csv
import functools
import multiprocessing
import os
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import optuna
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data" / "credit-g.csv"
POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"
COLUMNS = ["mode", "storage", "workers", "trials", "complete", "window_s", "trials_per_min", "storage_ms_per_trial",
           "storage_calls_per_trial", "sampler_ms_per_trial", "storage_share", "sampler_share",
           "heartbeat_calls", "pg_connections_peak", "db_cpu_ms_per_trial", "sampler_ms_first_tenth",
           "sampler_ms_last_tenth", "cores"]


# ---- timing of storage and sampler calls, installed in each worker process --------------------------

class _Clock:
    def __init__(self):
        self.local = threading.local()
        self.main = {"storage": 0.0, "storage_calls": 0, "sampler": 0.0}
        self.heartbeat_calls = 0
        self.samples = []  # (epoch seconds, seconds) of each outermost sampler call


CLOCK = _Clock()


def _timed(function, kind):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        depth = getattr(CLOCK.local, kind, 0)
        if depth:  # a call made inside another timed call is already counted
            return function(*args, **kwargs)
        setattr(CLOCK.local, kind, 1)
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            setattr(CLOCK.local, kind, 0)
            if threading.current_thread() is threading.main_thread():
                CLOCK.main[kind] += time.perf_counter() - started
                if kind == "storage":
                    CLOCK.main["storage_calls"] += 1
                else:
                    CLOCK.samples.append((time.time(), time.perf_counter() - started))
            else:
                CLOCK.heartbeat_calls += 1
    return wrapper


def _install_clock():
    from optuna.storages import BaseStorage, JournalStorage, RDBStorage

    public = [name for name in vars(BaseStorage) if not name.startswith("_")] + ["record_heartbeat"]
    for cls in (RDBStorage, JournalStorage):
        for name in public:
            if callable(getattr(cls, name, None)):
                setattr(cls, name, _timed(getattr(cls, name), "storage"))
    for name in ("sample_relative", "sample_independent", "infer_relative_search_space"):
        setattr(optuna.samplers.TPESampler, name, _timed(getattr(optuna.samplers.TPESampler, name), "sampler"))


# ---- the worker processes ------------------------------------------------------------------------------

def _load():
    frame = pd.read_csv(DATA)
    return frame.drop(columns=["class"]), frame["class"]


def _real_worker(url, study_name):
    from threadpoolctl import threadpool_limits

    from automl.search import run_worker

    _install_clock()
    X, y = _load()
    started = time.time()
    with threadpool_limits(1):
        run_worker(X, y, storage=url, study_name=study_name, verbose=0, wait=60)
    return {**CLOCK.main, "heartbeat_calls": CLOCK.heartbeat_calls, "wall": time.time() - started,
            "samples": CLOCK.samples}


class NullObjective:
    """A trial's storage traffic without its fits: sample the real space, report each fold, ask to prune."""

    def __init__(self, setup, search_key):
        self.setup, self.search_key = setup, search_key

    def __call__(self, trial):
        from automl.space import suggest_pipeline

        trial.set_user_attr("search_key", self.search_key)
        suggest_pipeline(trial, self.setup.profile, self.setup.specs, self.setup.seed)
        trial.set_user_attr("family", trial.params["model"])
        rng = np.random.default_rng(trial.number)
        scores = []
        for fold in range(len(self.setup.folds)):
            scores.append(float(rng.uniform(0.6, 0.8)))
            trial.set_user_attr("fold_scores", scores)
            trial.report(float(np.mean(scores)), step=fold + 1)
            if fold + 1 < len(self.setup.folds) and trial.should_prune():
                raise optuna.TrialPruned()
        return float(np.mean(scores))


def _null_worker(url, study_name):
    from automl.search import SharedSearch, open_storage, run_search

    _install_clock()
    X, y = _load()
    started = time.time()
    storage = open_storage(url, None)
    shared = SharedSearch.wait_for(storage, study_name, 60)
    setup = shared.setup(X, y)
    sampler = shared.sampler()
    sampler.reseed_rng()
    run_search(NullObjective(setup, shared.search_key), storage=storage, study_name=study_name, sampler=sampler,
               pruner=shared.pruner(setup), max_trials=shared.max_trials, wait_for_others=False)
    return {**CLOCK.main, "heartbeat_calls": CLOCK.heartbeat_calls, "wall": time.time() - started,
            "samples": CLOCK.samples}


# ---- one cell: publish a search, run W workers, read the rates --------------------------------------------

def _storage_url(kind, folder):
    return {"journal": str(Path(folder) / "study.journal"), "sqlite": f"sqlite:///{Path(folder) / 'study.db'}",
            "postgresql": POSTGRES}[kind]


def _publish(url, study_name, include, n_trials, oof_dir):
    from automl.search import SharedSearch, open_storage, prepare_search, prepare_study
    from automl.space import portfolio

    X, y = _load()
    setup = prepare_search(X, y, cv=5, random_state=0, include=include)
    storage = open_storage(url, None)
    prepare_study(storage, study_name, setup.metric.direction, portfolio(setup.specs))
    # As AutoClassifier(n_trials=n_trials, time_budget=None) publishes it: TPE, pruning on.
    SharedSearch.of(setup, task="classification", settings={"include": include, "sampler": "tpe", "pruning": True},
                    n_startup_trials=min(max(n_trials // 2, 2), 10), storage=storage, oof_dir=oof_dir, deadline=None,
                    max_trials=n_trials, target_name="class").publish(storage, study_name)
    return storage


def _pg_connections():
    import sqlalchemy

    engine = sqlalchemy.create_engine(POSTGRES.replace("postgresql://", "postgresql+psycopg://"))
    try:
        with engine.connect() as connection:
            return connection.execute(sqlalchemy.text(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = 'test'")).scalar() - 1  # not this one
    finally:
        engine.dispose()


def _db_cpu_seconds():
    """CPU seconds of the PostgreSQL server so far (from /proc): its live processes' own, plus what the
    postmaster collected from backends that have exited (a worker's connections close when it ends)."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        if "(postgres)" in text:
            fields = text.rsplit(")", 1)[1].split()
            total += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime in clock ticks
    return total / os.sysconf("SC_CLK_TCK")


def _sampler_ms(clocks, part):
    """Mean ms of sampler calls in the first or last tenth of the search (by time): TPE's cost as trials pile up."""
    samples = sorted(sample for clock in clocks for sample in clock["samples"])
    tenth = max(1, len(samples) // 10)
    chosen = samples[:tenth] if part == "first" else samples[-tenth:]
    return round(1000 * float(np.mean([seconds for _, seconds in chosen])), 2) if chosen else ""


def run_cell(mode, kind, workers, n_trials, include):
    study_name = f"scaling-{mode}-{kind}-{workers}-{uuid.uuid4().hex[:6]}"
    with tempfile.TemporaryDirectory(prefix="scaling-") as folder:
        url = _storage_url(kind, folder)
        storage = _publish(url, study_name, include, n_trials, folder)
        target = _real_worker if mode == "real" else _null_worker
        context = multiprocessing.get_context("spawn")
        peak, db_cpu = 0, _db_cpu_seconds()
        with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
            futures = [pool.submit(target, url, study_name) for _ in range(workers)]
            while not all(f.done() for f in futures):
                if kind == "postgresql":
                    peak = max(peak, _pg_connections())
                time.sleep(0.5)
            clocks = [f.result() for f in futures]
        db_cpu = _db_cpu_seconds() - db_cpu  # includes the peak-connection queries, a few ms
        study = optuna.load_study(study_name=study_name, storage=storage)
        trials = [t for t in study.get_trials() if t.datetime_complete is not None]
        if kind == "postgresql":
            optuna.delete_study(study_name=study_name, storage=storage)
    window = (max(t.datetime_complete for t in trials) - min(t.datetime_start for t in trials)).total_seconds()
    busy = workers * window  # process-seconds inside the trial window (startup and data loading left out)
    total = {key: sum(c[key] for c in clocks) for key in ("storage", "storage_calls", "sampler", "heartbeat_calls")}
    n = len(trials)
    return {
        "mode": mode, "storage": kind, "workers": workers, "trials": n,
        "complete": sum(t.state == optuna.trial.TrialState.COMPLETE for t in trials), "window_s": round(window, 2),
        "trials_per_min": round(60 * n / window, 1), "storage_ms_per_trial": round(1000 * total["storage"] / n, 2),
        "storage_calls_per_trial": round(total["storage_calls"] / n, 1),
        "sampler_ms_per_trial": round(1000 * total["sampler"] / n, 2),
        "storage_share": round(total["storage"] / busy, 4), "sampler_share": round(total["sampler"] / busy, 4),
        "heartbeat_calls": total["heartbeat_calls"], "pg_connections_peak": peak if kind == "postgresql" else "",
        "db_cpu_ms_per_trial": round(1000 * db_cpu / n, 2) if kind == "postgresql" else "",
        "sampler_ms_first_tenth": _sampler_ms(clocks, "first"), "sampler_ms_last_tenth": _sampler_ms(clocks, "last"),
        "cores": os.cpu_count(),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", nargs="+", default=["real", "null"], choices=["real", "null"])
    parser.add_argument("--storages", nargs="+", default=["journal", "sqlite", "postgresql"],
                        choices=["journal", "sqlite", "postgresql"])
    parser.add_argument("--workers", nargs="+", type=int, default=[1, 2, 4])
    parser.add_argument("--real-trials", type=int, default=60)
    parser.add_argument("--null-trials", type=int, default=300)
    parser.add_argument("--include", default="logreg,hgb,rf,et")
    parser.add_argument("--csv", default=None, help="append rows here")
    args = parser.parse_args(argv)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    writer = None
    if args.csv:
        new = not Path(args.csv).exists()
        handle = open(args.csv, "a", newline="")
        writer = csv.DictWriter(handle, COLUMNS)
        if new:
            writer.writeheader()
    print(",".join(COLUMNS), flush=True)
    for mode in args.modes:
        for kind in args.storages:
            for workers in args.workers:
                n_trials = args.real_trials if mode == "real" else args.null_trials
                row = run_cell(mode, kind, workers, n_trials, args.include.split(","))
                print(",".join(str(row[c]) for c in COLUMNS), flush=True)
                if writer:
                    writer.writerow(row)
                    handle.flush()


if __name__ == "__main__":
    main()
