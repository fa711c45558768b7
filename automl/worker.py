"""Join a running search from another process or machine: what ``automl worker`` does.

A fit publishes its search in the study itself, as the user attribute ``automl_search``
(:class:`SharedSearch`): the task, the settings that rebuild its folds and search space, the
``search_key`` of its data, folds and metric, its deadline and trial cap, the folder for OOF
predictions and the MLflow parent run. A worker started with the same storage, study name and data
reads it, checks that its copy of the data gives the same ``search_key``, and runs trials of the
same study until the search's deadline, its trial cap, the worker's own time budget, or the fit
closing the search. Its trials land in the shared study (so TPE learns from every worker), their
OOF arrays in the shared folder (so ensemble selection sees them) and their MLflow runs under the
fit's parent run.

Optuna's RDB storage (PostgreSQL across machines, SQLite on one) carries the study; the same code
runs on a journal file for workers of one machine.
"""

import logging
import os
import socket
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass

import optuna
from optuna.trial import TrialState

from .exceptions import DataValidationError
from .liveness import worker_alive
from .objective import CVObjective
from .search import (
    ProgressLine, heartbeat_of, make_pruner, make_sampler, open_storage, quiet_optuna, run_search,
)

logger = logging.getLogger(__name__)

# The study's user attributes that hold the published search and the fit's last sign of life.
SEARCH_ATTR = "automl_search"
BEAT_ATTR = "automl_search_beat"
# The fit writes its sign of life this often (seconds); a search silent for FIT_STALE seconds has lost
# its fit (killed), and workers stop rather than search for nobody.
FIT_BEAT = 10.0
FIT_STALE = 60.0


@dataclass
class SharedSearch:
    """A fit's search as workers need it to join; stored as JSON in the study (see the module docstring).

    Attributes
    ----------
    task : {"classification", "regression"}
    params : dict
        Estimator parameters that rebuild the search: ``metric, cv, random_state, include, sampler, pruning``.
    search_key : str
        Digest of the data, folds and metric (:func:`automl.objective.search_key`).
    fingerprint : str
        The training data's fingerprint, to say how a worker's data differs.
    n_samples : int
    n_startup_trials : int
        Finished trials (enqueued ones included, all brackets) before TPE models the history.
    max_trials : int or None
        Started trials in the study at which every worker stops (checked after each trial, so each
        worker may start one more).
    deadline : float or None
        Epoch seconds after which no trial starts (clocks of the machines must agree, as with NTP).
    grace : float
        Seconds past the deadline after which every worker stops its busy processes; the fit waits
        that long (and one second more) for other workers' trials.
    oof_dir : str
        Absolute folder of the OOF arrays; a file system every worker sees.
    oof_root : str or None
        The fit's ``oof_dir`` parameter (``oof_dir`` is its subfolder named for the study), or None when
        the OOF arrays are in the fit's temporary folder.
    heartbeat : list of int or None
        ``[interval, grace]`` seconds of the storage's heartbeat, used by every worker alike.
    mlflow : dict or None
        ``tracking_uri, experiment_id, parent_run_id`` of the fit's parent run; None when untracked.
    target : str or None
        Name of the target column, when the fit's ``y`` had one.
    not_joinable : str or None
        Why a worker cannot rebuild this search (a custom CV splitter or components), or None.
    fit : str
        ``host:pid`` of the fit's process.
    state : {"running", "closed"}
    beat : float or None
        Epoch seconds of the fit's last sign of life (read from the study, not stored with the search).
    """

    task: str
    params: dict
    search_key: str
    fingerprint: str
    n_samples: int
    n_startup_trials: int
    max_trials: int | None
    deadline: float | None
    grace: float
    oof_dir: str
    oof_root: str | None
    heartbeat: list | None
    mlflow: dict | None
    target: str | None
    not_joinable: str | None
    fit: str
    state: str = "running"
    beat: float | None = None

    @classmethod
    def of(cls, estimator, setup, storage, oof_dir, deadline, max_trials, tracker, target_name=None, oof_root=None,
           grace=5.0):
        """The search an estimator is about to run (called in ``fit`` once ``setup`` is made)."""
        n_folds = len(setup.folds)
        custom = [why for why, bad in (("a custom CV splitter", not isinstance(estimator.cv, int)),
                                       ("custom components", bool(estimator.components))) if bad]
        include = list(estimator.include) if estimator.include is not None else None
        mlflow = None
        if tracker.parent_run_id is not None:
            mlflow = {"tracking_uri": tracker.tracking_uri, "experiment_id": tracker.experiment_id,
                      "parent_run_id": tracker.parent_run_id}
        return cls(
            task=estimator._task,
            params={"metric": setup.metric.name, "cv": n_folds, "random_state": int(setup.seed), "include": include,
                    "sampler": estimator.sampler, "pruning": estimator._pruning()},
            search_key=estimator.search_key_, fingerprint=estimator.profile_.fingerprint,
            n_samples=int(estimator.profile_.n_samples),
            n_startup_trials=estimator._n_startup_trials(), max_trials=max_trials, deadline=deadline,
            grace=grace,
            oof_dir=os.path.abspath(oof_dir), oof_root=None if oof_root is None else os.path.abspath(oof_root),
            heartbeat=_as_list(heartbeat_of(storage)), mlflow=mlflow,
            target=target_name if isinstance(target_name, str) else None,
            not_joinable=" and ".join(custom) or None, fit=f"{socket.gethostname()}:{os.getpid()}",
        )

    def publish(self, storage, study_name):
        """Store this search in the study, state "running": workers may join from now on.

        Raises
        ------
        RuntimeError
            If the study holds another open search whose fit is alive: a second fit on the same study
            at once would fail the other's trials at its deadline and steal its workers.
        """
        current = SharedSearch.read(storage, study_name)
        if current is not None and current.is_open() and current.fit_alive():
            until = "" if current.deadline is None else f" until {_clock(current.deadline)}"
            raise RuntimeError(
                f"Study {study_name!r} has a running search, by the fit {current.fit}{until}. Two fits on one "
                "study at once would fail each other's trials: wait for it, or give this fit another study_name.")
        study = _study(storage, study_name)
        study.set_user_attr(SEARCH_ATTR, {k: v for k, v in asdict(self).items() if k != "beat"})
        study.set_user_attr(BEAT_ATTR, time.time())

    @contextmanager
    def keep_alive(self, storage, study_name):
        """Write the fit's sign of life every FIT_BEAT seconds while the block runs (a daemon thread)."""
        stop = threading.Event()
        study = _study(storage, study_name)  # here: quiet_optuna is not thread-safe, the trials' is running

        def beat():
            while not stop.wait(FIT_BEAT):
                study.set_user_attr(BEAT_ATTR, time.time())

        thread = threading.Thread(target=beat, name="automl-search-beat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    def extend(self, storage, study_name, deadline):
        """Move the search's deadline later (a top-up): workers that join from now on search until then.

        Workers already searching keep the deadline they read when they joined.
        """
        self.deadline = deadline
        study = _study(storage, study_name)
        published = study.user_attrs.get(SEARCH_ATTR)
        if published is not None:
            study.set_user_attr(SEARCH_ATTR, {**published, "deadline": deadline})

    @staticmethod
    def close(storage, study_name):
        """Mark the study's search closed: workers stop after their current trial and late ones do not join."""
        study = _study(storage, study_name)
        published = study.user_attrs.get(SEARCH_ATTR)
        if published is not None:
            study.set_user_attr(SEARCH_ATTR, {**published, "state": "closed"})

    @classmethod
    def read(cls, storage, study_name):
        """The study's published search, or None when there is no such study or no search in it."""
        try:
            attrs = _study(storage, study_name).user_attrs
        except KeyError:  # Optuna's way of saying the study does not exist
            return None
        return cls.from_attrs(attrs)

    @classmethod
    def from_attrs(cls, attrs):
        """The search in a study's user attributes, or None."""
        published = attrs.get(SEARCH_ATTR)
        return None if published is None else cls(**{**published, "beat": attrs.get(BEAT_ATTR)})

    def fit_alive(self):
        """The fit's process has not gone (on this machine) and wrote a sign of life in the last FIT_STALE s."""
        fresh = self.beat is not None and time.time() - self.beat < FIT_STALE
        return fresh and worker_alive(self.fit)

    @classmethod
    def wait_for(cls, storage, study_name, wait):
        """The running search of the study, polling for up to ``wait`` seconds.

        Raises
        ------
        TimeoutError
            If no running search (one not closed and before its deadline) appeared in time; the message
            says what the study holds.
        """
        until, said = time.time() + wait, False
        while True:
            shared = cls.read(storage, study_name)
            if shared is not None and shared.is_open() and shared.fit_alive():
                return shared
            if time.time() >= until:
                raise TimeoutError(_why_not_open(shared, study_name, wait))
            if not said:
                logger.info("%s Waiting up to %.0f s for a fit to publish one.", _why_not_open(shared, study_name),
                            until - time.time())
                said = True
            time.sleep(1.0)

    def is_open(self):
        """Running, and before its deadline."""
        return self.state == "running" and (self.deadline is None or time.time() < self.deadline)

    def oof_folder(self, oof_dir=None):
        """This search's OOF folder as this machine sees it: ``oof_dir`` stands for the fit's ``oof_dir``."""
        if oof_dir is None:
            return self.oof_dir
        if self.oof_root is None:
            raise ValueError(f"The fit {self.fit} keeps its OOF files in a temporary folder of its machine "
                             f"({self.oof_dir}), so oof_dir={oof_dir!r} cannot stand for it: give the fit an "
                             "oof_dir on a shared file system.")
        return os.path.join(oof_dir, os.path.basename(self.oof_dir))

    def sampler(self, stream=0):
        """The search's sampler; ``stream`` > 0 seeds another stream (a top-up must not replay the first)."""
        return make_sampler(self.params["sampler"], (self.params["random_state"] + stream) % 2**32,
                            self.n_startup_trials)

    def pruner(self):
        return make_pruner(self.params["pruning"], self.params["cv"])

    def objective(self, setup, oof_dir, deadline):
        """The CV objective on ``setup`` (see :meth:`automl.estimator._AutoMLBase._prepare`)."""
        return CVObjective(setup.X, setup.y, setup.folds, setup.profile, setup.specs, setup.metric, oof_dir,
                           deadline, setup.seed, search_key=self.search_key)


def _study(storage, study_name):
    with quiet_optuna():
        return optuna.load_study(study_name=study_name, storage=storage)


def _as_list(value):
    return None if value is None else list(value)


def _clock(moment):
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(moment))


def _why_not_open(shared, study_name, wait=None):
    within = "" if wait is None else f" within {wait:.0f} s"
    if shared is None:
        return (f"No search was published in study {study_name!r}{within}: start the fit "
                "(AutoClassifier(storage=..., study_name=...).fit or automl fit --storage --study) first.")
    if shared.state != "running":
        return f"The search of study {study_name!r} is closed (its fit {shared.fit} has finished); nothing to join."
    if shared.deadline is not None and time.time() >= shared.deadline:
        return (f"The search of study {study_name!r} passed its deadline {_clock(shared.deadline)}; nothing to join "
                "(if its fit still runs, this machine's clock disagrees with the fit's: synchronize them, e.g. NTP).")
    return (f"The fit {shared.fit} of study {study_name!r} has not been seen since "
            f"{_clock(shared.beat) if shared.beat else 'it published its search'}: it was killed; nothing to join.")


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
               wait=300.0, verbose=1):
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
        Worker processes on this machine.
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
    if not isinstance(n_jobs, int) or n_jobs < 1:
        raise ValueError(f"n_jobs must be an int of at least 1; got {n_jobs!r}.")
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
    setup = _setup(shared, X, y)
    oof_dir = _check_oof_dir(shared.oof_folder(oof_dir), study_name)
    deadline = _earliest(shared.deadline, None if time_budget is None else started + time_budget)
    sampler = shared.sampler()
    sampler.reseed_rng()  # the fit's first worker has the seeded stream; ours must propose other points
    callbacks = [cb for cb in (_trial_logger(shared, tracking_uri), ProgressLine(deadline) if verbose else None,
                               _StopWhenClosed(shared.search_key)) if cb is not None]
    result = run_search(
        shared.objective(setup, oof_dir, deadline), storage=storage, study_name=study_name, sampler=sampler,
        pruner=shared.pruner(), max_trials=shared.max_trials, deadline=deadline, n_jobs=n_jobs,
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


def _setup(shared, X, y):
    from .estimator import AutoClassifier
    from .regressor import AutoRegressor

    kind = AutoRegressor if shared.task == "regression" else AutoClassifier
    estimator = kind(**shared.params, tracking=False, verbose=0)
    setup = estimator._prepare(X, y)
    if estimator.search_key_ != shared.search_key:
        same = estimator.profile_.fingerprint == shared.fingerprint
        raise DataValidationError(
            f"This worker's data does not match the search's: {estimator.profile_.n_samples} rows with "
            f"fingerprint {estimator.profile_.fingerprint} against {shared.n_samples} rows with fingerprint "
            f"{shared.fingerprint}" + (" (same data, other folds or metric)" if same else "")
            + ". Give the worker the very file (rows, order, values, target) the fit was given.")
    return setup


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
    from .tracking import TrialLogger

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
