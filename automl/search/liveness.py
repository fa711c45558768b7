"""Who runs a trial, and what becomes of its trial when a worker dies, is stopped or is interrupted.

Every trial is signed by the process that runs it (``host:pid``) and the search call that started it
(``launch``): :class:`SignedObjective`. From the signature, the storage's heartbeat (Optuna's
``fail_stale_trials``, RDB storages) and the process table of this machine, :func:`wait_for_running`
and :func:`fail_dead` tell a dead worker's trial from a live one; :func:`fail_running` stops the trials
of one launch, never another worker's.
"""

import logging
import os
import socket
import time
import warnings

import optuna
from optuna.trial import TrialState

logger = logging.getLogger(__name__)


# The error of a trial whose worker was stopped at the deadline (fail_running's reason).
STOPPED_AT_DEADLINE = "stopped at the time budget"


def fail_running(storage, study_name, launch=None, reason=STOPPED_AT_DEADLINE):
    """Mark trials left RUNNING by a stopped (or killed) worker as failed, with the reason; return their count.

    Parameters
    ----------
    storage : str or optuna.storages.BaseStorage
    study_name : str
    launch : str or None
        Only trials started by the :func:`automl.search.run_search` call with this id (user attribute
        ``launch``): workers of other processes sharing the study are not ours to stop. None: every
        running trial.
    reason : str
        Stored as the trial's user attribute ``error``.
    """
    study = optuna.load_study(study_name=study_name, storage=storage)
    running = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
    return sum(_fail_one(study, t, reason) for t in running if launch is None or t.user_attrs.get("launch") == launch)


def wait_for_running(storage, study_name, until=None, poll=0.5):
    """Wait until no trial of the study is running; mark failed those of dead workers; return their count.

    A worker on another machine is dead when its trial's heartbeat is older than the storage's grace
    period (RDB storages, :func:`optuna.storages.fail_stale_trials`); a worker on this machine when
    its process is gone (the only test a journal file has). At ``until`` (epoch seconds) the trials
    still running are marked failed.
    """
    study = optuna.load_study(study_name=study_name, storage=storage)
    failed, started, said = 0, time.time(), False
    while True:
        running = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
        if not running:
            return failed
        if not said and time.time() - started > 10:
            logger.warning("Waiting for %d trial(s) that other workers are running: %s.", len(running),
                           ", ".join(f"{t.number} by {t.user_attrs.get('worker', '?')}" for t in running[:5]))
            said = True
        if until is not None and time.time() > until:
            return failed + fail_running(storage, study_name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            optuna.storages.fail_stale_trials(study)
        failed += fail_dead(storage, study_name)
        time.sleep(poll)


def fail_dead(storage, study_name, launch=None):
    """Fail the running trials (of ``launch``, or all) whose worker process of this machine is gone."""
    study = optuna.load_study(study_name=study_name, storage=storage)
    failed = 0
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        worker = trial.user_attrs.get("worker")
        if (launch is None or trial.user_attrs.get("launch") == launch) and not worker_alive(worker):
            failed += _fail_one(study, trial, f"worker {worker} died")
    return failed


def _fail_one(study, trial, reason):
    try:
        # The storage API addresses trials by their internal id; FrozenTrial keeps it as _trial_id.
        study._storage.set_trial_user_attr(trial._trial_id, "error", reason)
        study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
        return 1
    except optuna.exceptions.UpdateFinishedTrialError:
        return 0  # it finished meanwhile: nothing to mark


def worker_alive(worker):
    """False only for a worker of this machine whose process is gone; other machines' are left to heartbeats."""
    host, _, pid = str(worker).rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def finished_elsewhere(exc):
    return isinstance(exc, optuna.exceptions.UpdateFinishedTrialError) or str(exc).startswith("Cannot tell a ")


def ended_by(study, number):
    """Why another process ended trial ``number`` of ``study``, for the worker whose result it refused."""
    if number is None:
        return "unknown trial"
    reason = study.trials[number].user_attrs.get("error")
    if reason is not None:
        return f"trial {number}: {reason}"
    # Optuna's fail_stale_trials, run by every worker as it starts a trial, leaves no reason of its own.
    return (f"trial {number}: its heartbeat was older than the storage's grace period, so another worker took it "
            "for dead (a worker too busy to beat, or a storage too slow to write: SQLite under several "
            "processes)")


class SignedObjective:
    """The objective, with each trial signed by the worker that runs it (``host:pid``) and its launch.

    The signature tells a dead worker's trial from a live one (:func:`wait_for_running`) and which
    trials a search may stop (:func:`fail_running`); MLflow shows it as the trial run's ``worker`` tag.
    """

    def __init__(self, objective, launch):
        self.objective, self.launch, self.number = objective, launch, None

    def __call__(self, trial):
        self.number = trial.number  # the trial whose result another process may refuse (ended_by)
        trial.set_user_attr("worker", f"{socket.gethostname()}:{os.getpid()}")
        if self.launch is not None:
            trial.set_user_attr("launch", self.launch)
        try:
            return self.objective(trial)
        except KeyboardInterrupt:  # Ctrl-C, or SIGTERM turned into it: Optuna fails the trial, we say why
            trial.set_user_attr("error", "interrupted")
            raise
