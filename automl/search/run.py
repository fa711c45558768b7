"""Run the study: worker processes share one Optuna storage until the trial count or the clock ends.

``run_search`` receives its sampler, pruner, storage and callbacks ready-made (see
:mod:`automl.search.study`); it only schedules. Trials run in
worker **processes** (joblib's loky executor) so that a runaway fit can be killed: ``study.optimize``
checks its timeout only between trials, so the parent process stops workers that outlive the
deadline and marks the trials they left running as failed.
"""

import concurrent.futures
import logging
import os
import sys
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import optuna
from joblib.executor import get_memmapping_executor
from joblib.externals.loky.process_executor import TerminatedWorkerError
from optuna.trial import TrialState
from threadpoolctl import threadpool_limits

from .liveness import (
    STOPPED_AT_DEADLINE, SignedObjective, ended_by, fail_dead, fail_running, finished_elsewhere, wait_for_running,
)
from .objective import oof_path
from .study import _STARTED, count_started, quiet_optuna
from .threads import repeating, threads_per_job

logger = logging.getLogger(__name__)


@dataclass
class SearchResult:
    """What the search leaves behind.

    Attributes
    ----------
    study : optuna.Study
    oof : dict of int -> ndarray of shape (n_scored, n_classes) or (n_scored,)
        OOF predictions of each ensemble candidate, by trial number, on the rows the folds score
        (:func:`automl.search.scored_rows`): every complete trial, and a holdout trial stopped by the
        time budget after a rung (:func:`load_oof`).
    seconds : float
        Wall seconds of the search.
    killed : int
        Trials that were still running at the hard deadline and were marked failed.
    callback_seconds : float
        Wall seconds spent inside callbacks that count their own time (``.seconds``, as the MLflow
        trial logger does), summed over the workers that ended normally.
    launch : str
        Id of this search's launch, the user attribute ``launch`` of every trial its workers ran.
    died : int
        Worker processes of this call that died (killed from outside) before the end.
    stopped : int
        Worker processes still busy at the deadline plus grace, and stopped: the process pool is gone,
        and a later search on this machine starts a new one.
    start_seconds : float
        Seconds from the call until its first trial started (nan if none did): mostly the start of the
        worker processes (2-3 s on two cores, importing scikit-learn and the model libraries).
    top_up_seconds : float
        Wall seconds of a top-up (:meth:`followed_by`) included in ``seconds``; 0.0 without one.
    selection : tuple or None
        The last ensemble selection run on ``oof`` (key, selection, chosen), kept by
        :func:`automl.ensemble.select_members` so the top-up's estimate and the final ensemble, which
        ask the same question of the same trials, pay for one answer.
    """

    study: optuna.Study
    oof: dict
    seconds: float
    killed: int
    callback_seconds: float
    launch: str = ""
    died: int = 0
    stopped: int = 0
    start_seconds: float = np.nan
    top_up_seconds: float = 0.0
    selection: tuple | None = None
    oof_dir: str | None = None

    def followed_by(self, later):
        """This search and a later one of the same study (a top-up) as one result.

        The later one's study, OOF arrays and launch; seconds and counts summed, the later one's
        seconds also as ``top_up_seconds``.
        """
        return replace(later, seconds=self.seconds + later.seconds, top_up_seconds=later.seconds,
                       selection=None, killed=self.killed + later.killed, died=self.died + later.died,
                       stopped=self.stopped + later.stopped,
                       callback_seconds=self.callback_seconds + later.callback_seconds)


def run_search(objective, *, storage, study_name, sampler, pruner, n_trials=None, max_trials=None, deadline=None,
               n_jobs=1, threads=None, callbacks=(), oof_dir=None, search_key=None, grace=5.0, wait_for_others=True):
    """Run trials of a study in ``n_jobs`` processes until ``n_trials`` or ``deadline``.

    Parameters
    ----------
    objective : callable
        ``objective(trial) -> float``, picklable (it is sent to every worker).
    storage : str or optuna.storages.BaseStorage
        Where the study lives (see :func:`open_storage`); every worker opens it.
    study_name : str
        An existing study in ``storage`` (direction set, portfolio enqueued by the caller).
    sampler, pruner : optuna sampler and pruner
        Worker 0 uses ``sampler`` as given (reproducible under a seed); other workers reseed it.
    n_trials : int or None
        Total trials of this search across workers (Optuna's ``MaxTrialsCallback``); trials of an
        earlier search of the study and enqueued trials still waiting do not count.
    max_trials : int or None
        Instead of ``n_trials``: stop once the study holds this many started trials, counted the
        same way by every process that shares the search.
    deadline : float or None
        Epoch seconds after which no trial starts; workers still busy ``grace`` seconds later are
        stopped and their running trials marked failed.
    n_jobs : int, default=1
        Worker processes. With one worker and no deadline the trials run in this process.
    threads : int or None, default=None
        Threads of each trial's model (the objective's ``threads`` attribute, when it has one, and
        the OpenMP/BLAS limit of its worker). None: the cores shared out between the workers
        (:func:`automl.search.threads_per_job`).
    callbacks : sequence of callable
        Optuna callbacks ``(study, frozen_trial)``, run in the worker after each trial.
    oof_dir : path-like or None
        Folder where the objective writes OOF arrays; None loads none.
    search_key : str or None
        Load the OOF arrays of complete trials with this ``search_key`` user attribute only (an
        earlier search of the study may have scored other rows); None loads every one found.
    grace : float, default=5.0
        Seconds past ``deadline`` before busy workers are stopped.
    wait_for_others : bool, default=True
        After this call's workers end, wait for trials that workers of other processes or machines
        (``automl worker``) are still running: see :func:`wait_for_running`. A joining worker
        passes False.

    Returns
    -------
    result : SearchResult
        ``killed`` counts the trials marked failed: still running at the deadline, or left by a
        worker that died.
    """
    started = time.time()
    callbacks = list(callbacks)
    if n_trials:
        # Enqueued trials wait in the study as WAITING and a continued study holds earlier trials:
        # count only the trials this search starts.
        max_trials = count_started(storage, study_name) + n_trials
    if max_trials:
        callbacks.append(optuna.study.MaxTrialsCallback(max_trials, states=_STARTED))
    launch = uuid.uuid4().hex
    # `automl worker` processes of other fits on this machine are unknown here: the README has them
    # started with OMP_NUM_THREADS=1, which threads_per_job honours.
    threads = threads or threads_per_job(n_jobs)
    if n_jobs == 1 and deadline is None:
        callback_seconds = [_work(study_name, storage, sampler, pruner, objective, callbacks, None, 0, threads, launch,
                                  in_pool=False)]
        killed = died = stopped = 0
    else:
        tasks = [
            (study_name, storage, sampler, pruner, objective, callbacks, deadline, i, threads, launch)
            for i in range(n_jobs)
        ]
        callback_seconds, killed, died, stopped = _run_in_processes(tasks, storage, study_name, deadline, grace, launch)
    if wait_for_others:
        # Joined workers stop their own busy processes at deadline + the same grace; a second more for the storage.
        killed += wait_for_running(storage, study_name, None if deadline is None else deadline + grace + 1.0)
    study = optuna.load_study(study_name=study_name, storage=storage)
    return SearchResult(study=study, oof=load_oof(study, oof_dir, search_key), seconds=time.time() - started,
                        killed=killed, callback_seconds=float(sum(callback_seconds)), launch=launch, died=died,
                        stopped=stopped, start_seconds=_first_start(study, launch) - started,
                        oof_dir=None if oof_dir is None else str(oof_dir))


def _first_start(study, launch):
    starts = [t.datetime_start.timestamp() for t in study.get_trials(deepcopy=False, states=_STARTED)
              if t.user_attrs.get("launch") == launch and t.datetime_start is not None]
    return min(starts, default=np.nan)


def load_oof(study, oof_dir, search_key=None):
    """OOF arrays of the study's ensemble candidates (with ``search_key``), by trial number.

    The candidates are the complete trials and the trials stopped by the time budget that left an
    OOF file (a holdout trial after its first rung: its model and predictions are those of its last
    rung, scored on the same holdout rows; a CV trial stopped between folds leaves none), whether
    the trial stopped itself before a rung it had no time for, or its worker was stopped at the
    deadline during one (:data:`~automl.search.liveness.STOPPED_AT_DEADLINE`, a failed trial). A
    complete trial whose file is missing (an earlier fit's temporary folder, a worker writing
    elsewhere) is named in a warning.
    """
    trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL))
    if search_key is not None:
        trials = [t for t in trials if t.user_attrs.get("search_key") == search_key]
    if oof_dir is None:
        return {}
    candidates = [t for t in trials if t.state == TrialState.COMPLETE or t.user_attrs.get("stopped")
                  or t.user_attrs.get("error") == STOPPED_AT_DEADLINE and t.user_attrs.get("model_rows")]
    oof = {t.number: np.load(oof_path(oof_dir, t.number)) for t in candidates
           if oof_path(oof_dir, t.number).exists()}
    missing = [t for t in trials if t.state == TrialState.COMPLETE and t.number not in oof]
    if missing:
        logger.warning(
            "%d complete trial(s) of this search have no OOF file in %s: they are on the leaderboard but not "
            "ensemble candidates. Trial(s) %s, run by %s. Either an earlier fit on this study kept its OOF files in a "
            "temporary folder (give oof_dir to keep them), or a worker wrote them to another folder (its oof_dir "
            "must be the fit's, as that machine mounts it).", len(missing), oof_dir,
            ", ".join(str(t.number) for t in missing[:10]),
            ", ".join(sorted({str(t.user_attrs.get("worker", "?")) for t in missing})))
    return oof


def _run_in_processes(tasks, storage, study_name, deadline, grace, launch):
    """Run each task's ``_work`` in its own process; kill the workers still busy at deadline + grace."""
    timeout = None if deadline is None else max(1.0, deadline - time.time() + grace)
    # One clock for all workers. (joblib's Parallel timeout restarts for each task it waits on, so
    # a runaway trial in the second worker outlived the deadline by a whole budget.)
    # joblib's own process pool (the one Parallel reuses), so later joblib calls in this process,
    # ours or the user's, find it in the state they expect.
    executor = get_memmapping_executor(len(tasks))
    futures = [executor.submit(_work, *task) for task in tasks]
    try:
        done, busy = concurrent.futures.wait(futures, timeout=timeout)
    except BaseException:  # Ctrl-C or SIGTERM: stop our processes now, not at their deadline
        _kill(executor)
        fail_running(storage, study_name, launch, reason="interrupted")
        raise
    killed = 0
    if busy:
        _kill(executor)
        # Expected at most deadlines (a trial rarely ends just in time); the leaderboard shows it as
        # failed, with the reason. Not a warning: a user with verbose=0 saw it on every fit.
        logger.info("Stopped %d search worker(s) %.1f s after the search deadline.", len(busy), grace)
        killed = fail_running(storage, study_name, launch)
    seconds, died = [], 0
    for future in done:
        try:
            seconds.append(future.result())
        except TerminatedWorkerError as exc:  # a worker process killed from outside (OOM killer, kill -9)
            died += 1
            logger.warning("A search worker process died (%s); its running trial is marked failed.",
                           str(exc).splitlines()[0])
            killed += fail_dead(storage, study_name, launch)
    return seconds, killed, died, len(busy)


def _kill(executor):
    """Kill the executor's worker processes, and release what they could not."""
    pids = list(getattr(executor, "_processes", {}))  # loky's pid -> process map, gone after shutdown
    executor.shutdown(wait=True, kill_workers=True)
    _release_semaphores(pids)


def _release_semaphores(pids):
    """Unlink the POSIX semaphores that killed worker processes made and could not release.

    A trial's model may run joblib threads, whose pool makes semaphores registered with loky's resource
    tracker; a worker killed mid-trial leaves them in /dev/shm, and the tracker names them at the
    interpreter's exit ("There appear to be N leaked semlock objects"). Their names carry the pid of
    the process that made them (``/loky-<pid>-...``). Where there is no /dev/shm (macOS), nothing is done.
    """
    from _multiprocessing import sem_unlink

    from joblib.externals.loky.backend import resource_tracker

    for pid in pids:
        for path in Path("/dev/shm").glob(f"sem.loky-{pid}-*"):
            name = "/" + path.name[len("sem."):]
            try:
                sem_unlink(name)
            except OSError:
                continue
            resource_tracker.unregister(name, "semlock")


def _work(study_name, storage, sampler, pruner, objective, callbacks, deadline, index, threads, launch=None,
          in_pool=True):
    if index > 0:
        sampler.reseed_rng()
    if hasattr(objective, "threads"):
        objective.threads = threads  # a copy in a pool process; in this process, the caller's objective
    # Two workers each running a multi-threaded fit on two cores would fight for them.
    with quiet_optuna(), threadpool_limits(limits=threads):
        study = optuna.load_study(study_name=study_name, storage=storage, sampler=sampler, pruner=pruner)
        orphaned = _StopWhenOrphaned(os.getppid())
        while deadline is None or time.time() < deadline:
            try:
                timeout = None if deadline is None else deadline - time.time()
                signed = SignedObjective(objective, launch)
                study.optimize(signed, timeout=timeout, catch=(Exception,), callbacks=[*callbacks, orphaned])
                break
            except (ValueError, optuna.exceptions.UpdateFinishedTrialError) as exc:
                if not finished_elsewhere(exc):
                    raise
                # Another process failed our trial (past the deadline, or judged stale): the search goes on.
                logger.warning("Another process ended a trial of this worker before its result was stored (%s); "
                               "the result is dropped and the search goes on.", ended_by(study, signed.number))
    if orphaned.gone and in_pool:
        os._exit(0)  # a pool process whose owner was killed: nobody will collect a result, nor reuse it
    return sum(getattr(callback, "seconds", 0.0) for callback in callbacks)


class _StopWhenOrphaned:
    """Stop a worker's study after its current trial once the process that started it is gone.

    A SIGKILLed fit cannot stop its workers; without this they would search on, unowned, until
    the timeout (a restarted retraining job would find them still writing to the study).
    """

    def __init__(self, parent):
        self.parent, self.gone = parent, False

    def __call__(self, study, trial):
        if os.getppid() != self.parent:
            self.gone = True
            study.stop()


class ProgressLine:
    """One line of search progress on stderr: trials by how they ended, the best score, the seconds left.

    A trial stopped by the time budget is counted as ``stopped``, apart from those Hyperband
    ``pruned`` (Optuna records both as PRUNED; the leaderboard's note tells them apart the same way).
    The best score is that of the complete trials ("none yet" before the first).
    Used as an Optuna callback (a line after each trial: :func:`automl.search.run_worker`), or by the
    fit through :meth:`every`: a line at the start, then every few seconds while the search runs,
    whatever the trials do (a trial on a large table may run for minutes).

    Parameters
    ----------
    deadline : float or None, default=None
        Epoch seconds of the search's end, for the seconds left.
    stream : file-like or None, default=None
        None: ``sys.stderr``.
    search_key : str or None, default=None
        Count only the trials of this search (as :func:`automl.search.leaderboard` does).
    """

    def __init__(self, deadline=None, stream=None, search_key=None):
        self.deadline, self.stream, self.search_key = deadline, stream, search_key

    def __call__(self, study, trial):
        self.show(study)

    def show(self, study, stage=None):
        """Write the line for ``study``; ``stage`` replaces the seconds left (e.g. "final stage")."""
        trials = study.get_trials(deepcopy=False)
        if self.search_key is not None:
            trials = [t for t in trials if t.user_attrs.get("search_key") == self.search_key]
        count = {s: sum(t.state == s for t in trials) for s in TrialState}
        stopped = sum(t.state == TrialState.PRUNED and bool(t.user_attrs.get("stopped")) for t in trials)
        complete = [t.value for t in trials if t.state == TrialState.COMPLETE]
        best = f"{(max if study.direction.name == 'MAXIMIZE' else min)(complete):.4f}" if complete else "none yet"
        left = "" if self.deadline is None else f" | {max(0, self.deadline - time.time()):.0f} s left"
        stream = self.stream or sys.stderr
        # A terminal redraws one line; a log file or CI gets one line per call.
        start, end = ("\r", "   ") if stream.isatty() else ("", "\n")
        running = f"{count[TrialState.RUNNING]} running, " if count[TrialState.RUNNING] else ""
        stopped_text = f", {stopped} stopped by the budget" if stopped else ""
        stream.write(
            f"{start}[automl] trials {count[TrialState.COMPLETE]} done, {running}"
            f"{count[TrialState.PRUNED] - stopped} pruned{stopped_text}, {count[TrialState.FAIL]} failed | "
            f"best {best}{f' | {stage}' if stage else left}{end}"
        )
        stream.flush()

    def every(self, seconds, storage, study_name):
        """Show the line at the start and every ``seconds`` while the block runs (a daemon thread): a context."""
        study = optuna.load_study(study_name=study_name, storage=storage)
        return repeating(lambda: self.show(study), seconds, "automl-progress", first=True)
