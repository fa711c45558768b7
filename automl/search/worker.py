"""Join a running search from another process or machine: what ``automl worker`` does.

A worker started with the same storage, study name and data reads the search a fit published in
its study (:class:`~automl.search.shared.SharedSearch`), rebuilds its setup and checks that its copy
of the data gives the same ``search_key``, then runs trials of the same study until the search's
deadline, its trial cap, the worker's own time budget, or the fit closing the search. Its trials land
in the shared study (so TPE learns from every worker), their OOF arrays in the shared folder (so
ensemble selection sees them) and their MLflow runs under the fit's parent run.

Optuna's RDB storage (PostgreSQL across machines, SQLite on one) carries the study; the same code
runs on a journal file for workers of one machine.
"""

import logging
import os
import socket
import time
from dataclasses import dataclass

from optuna.trial import TrialState

from ..exceptions import DataValidationError
from .run import ProgressLine, run_search
from .shared import SharedSearch, _why_not_open
from .study import heartbeat_of, open_storage
from .threads import resolve_n_jobs

logger = logging.getLogger(__name__)


@dataclass
class WorkerResult:
    """What one ``automl worker`` did.

    Attributes
    ----------
    study_name : str
    counts : dict of str -> int
        Trials this worker ran, by final state (``COMPLETE``, ``PRUNED``, ``FAIL``).
    seconds : float
        Wall seconds from start (waiting for the search included) to the end.
    died : int
        Worker processes of this worker that died (killed from outside); their trials were marked failed.
    """

    study_name: str
    counts: dict
    seconds: float
    died: int = 0

    def line(self):
        done = ", ".join(f"{n} {state.lower()}" for state, n in self.counts.items()) or "no trials"
        who = f"{socket.gethostname()}:{os.getpid()}"
        died = f"; {self.died} of its processes died" if self.died else ""
        return f"worker {who} of study {self.study_name!r}: {done} in {self.seconds:.0f} s{died}"


def run_worker(X, y, *, storage, study_name, time_budget=None, n_jobs=1, oof_dir=None, tracking_uri=None,
               wait=300.0, verbose=1, groups=None, sample_weight=None):
    """Join the search a fit published in ``study_name`` and run its trials until it ends.

    Parameters
    ----------
    X : DataFrame of shape (n_samples, n_features)
        The same training data as the fit's (same rows, order and values): the worker refuses data
        whose fingerprint, folds or metric differ, since its trials would not be comparable.
    y : array-like of shape (n_samples,)
    storage : str or optuna.storages.BaseStorage
        The fit's storage (``postgresql://user@host/db``, ``sqlite:///path``, or a journal path).
    study_name : str
    time_budget : float or None, default=None
        Wall seconds this worker works at most; the search's own deadline and trial cap apply too.
    n_jobs : int, default=1
        Worker processes on this machine; -1 for all cores, -2 all but one (as joblib reads it).
    oof_dir : str or None, default=None
        The fit's ``oof_dir`` as this machine mounts it, when at another path (the worker adds the
        study's subfolder, as the fit does); None: the path the fit published.
    tracking_uri : str or None, default=None
        MLflow tracking URI for the trial runs, when this machine reaches the fit's server by
        another address; None uses the fit's. Trials are not logged when the fit was not tracked.
    wait : float, default=300.0
        Seconds to wait for the fit to publish its search.
    verbose : int, default=1
        1 prints a progress line per trial to stderr.
    groups : array-like of shape (n_samples,) or None, default=None
        The rows' group labels, as the fit was given them (its folds follow them).
    sample_weight : array-like of shape (n_samples,) or None, default=None
        The rows' weights, as the fit was given them.

    Returns
    -------
    result : WorkerResult

    Raises
    ------
    TimeoutError
        If no running search appears in the study within ``wait`` seconds.
    ValueError
        If the search cannot be joined (a custom CV splitter or components) or the OOF folder is
        not on this machine; :class:`~automl.exceptions.DataValidationError` if the data differs.
    """
    started = time.time()
    storage = open_storage(storage, workdir=None)
    shared = SharedSearch.wait_for(storage, study_name, wait)
    if shared.not_joinable:
        raise ValueError(f"The search of study {study_name!r} uses {shared.not_joinable}, which a worker "
                         "cannot rebuild; only the fit's own n_jobs can run its trials.")
    n_jobs = resolve_n_jobs(n_jobs)
    fit_host = shared.fit.rpartition(":")[0]
    if fit_host != socket.gethostname() and heartbeat_of(storage) is None:
        # A journal file has no heartbeat: a dead worker of another machine would leave its trial
        # running for ever, and a fit without a deadline would wait for it for ever.
        raise ValueError(f"The fit of study {study_name!r} runs on {fit_host} and its storage has no heartbeat (a "
                         "journal file): workers of other machines need an RDB storage, PostgreSQL (or SQLite "
                         "on one machine). Start the fit with --storage postgresql://...")
    storage = _with_heartbeat(storage, shared.heartbeat)
    name = getattr(y, "name", None)
    if shared.target is not None and isinstance(name, str) and name != shared.target:
        raise DataValidationError(f"This worker's target is {name!r}; the fit of study {study_name!r} "
                                  f"searches on target {shared.target!r}.")
    setup = shared.setup(X, y, groups, sample_weight)
    oof_dir = _check_oof_dir(shared.oof_folder(oof_dir), study_name)
    deadline = _earliest(shared.deadline, None if time_budget is None else started + time_budget)
    sampler = shared.sampler()
    sampler.reseed_rng()  # the fit's first worker has the seeded stream; ours must propose other points
    callbacks = [cb for cb in (_trial_logger(shared, tracking_uri), ProgressLine(deadline) if verbose else None,
                               _StopWhenClosed(shared.search_key)) if cb is not None]
    result = run_search(
        shared.objective(setup, oof_dir, deadline), storage=storage, study_name=study_name, sampler=sampler,
        pruner=shared.pruner(setup), max_trials=shared.max_trials, deadline=deadline, n_jobs=n_jobs,
        callbacks=callbacks, oof_dir=None, grace=shared.grace, wait_for_others=False,
    )
    ours = [t for t in result.study.get_trials(deepcopy=False) if t.user_attrs.get("launch") == result.launch]
    counts = {state.name: sum(t.state == state for t in ours)
              for state in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)}
    return WorkerResult(study_name, {k: v for k, v in counts.items() if v}, time.time() - started, result.died)


def _with_heartbeat(storage, heartbeat):
    """The storage reopened with the study's heartbeat, so that every worker is judged by one grace period."""
    if heartbeat is None or heartbeat_of(storage) in (None, tuple(heartbeat)):
        return storage
    return open_storage(storage.url, workdir=None, heartbeat=tuple(heartbeat))


def _check_oof_dir(path, study_name):
    if not os.path.isdir(path) or not os.access(path, os.W_OK):
        raise ValueError(
            f"The OOF folder of study {study_name!r}, {path}, is not a writable folder on this machine: mount the "
            "fit's oof_dir here (and pass --oof-dir if its path differs), or fit with oof_dir on a shared file "
            "system. Without it this worker's trials could not join the ensemble.")
    return path


def _earliest(*moments):
    known = [m for m in moments if m is not None]
    return min(known) if known else None


def _trial_logger(shared, tracking_uri):
    if shared.mlflow is None:
        if tracking_uri is not None:
            logger.info("The fit %s is not tracked, so this worker logs its trials to no MLflow run.", shared.fit)
        return None
    from ..tracking import TrialLogger

    uri = tracking_uri or shared.mlflow["tracking_uri"]
    host = shared.fit.rpartition(":")[0]
    if tracking_uri is None and host != socket.gethostname() and not _is_server(uri):
        # The fit's store is a file on its machine: a run written here would have no parent.
        logger.warning("The fit logs to MLflow at %s, a local store of %s: this worker's trials are not logged "
                       "to MLflow. Pass --tracking-uri (tracking_uri=) with an address of a server both reach.",
                       uri, host)
        return None
    return TrialLogger(uri, shared.mlflow["experiment_id"], shared.mlflow["parent_run_id"])


def _is_server(uri):
    return str(uri).split(":", 1)[0] in {"http", "https", "databricks", "postgresql", "mysql", "mssql"}


class _StopWhenClosed:
    """Stop a worker after its current trial once the fit closed the search, began another, or was lost."""

    def __init__(self, search_key):
        self.search_key = search_key

    def __call__(self, study, trial):
        shared = SharedSearch.from_attrs(study.user_attrs)
        if shared is None or shared.search_key != self.search_key or shared.state != "running":
            study.stop()
        elif not shared.fit_alive():
            logger.warning("%s Stopping.", _why_not_open(shared, study.study_name))
            study.stop()
