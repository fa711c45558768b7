"""The study: its storage, sampler and pruner, the enqueued portfolio, and the leaderboard read from it.

Small composable pieces in Optuna's manner: :func:`open_storage`, :func:`make_sampler` and
:func:`make_pruner` build what :func:`automl.search.run_search` is handed; :func:`prepare_study`
creates or continues the study; :func:`leaderboard` is the table a user reads after the fit.
"""

import importlib.util
import logging
import os
import warnings
from contextlib import contextmanager

import numpy as np
import optuna
from optuna.storages.journal import JournalFileBackend, JournalStorage
from optuna.trial import TrialState

from .liveness import STOPPED_AT_DEADLINE

# States of the trials a search has started (WAITING ones are only enqueued).
_STARTED = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL, TrialState.RUNNING)


# A trial on an RDB storage writes a heartbeat this often (seconds); one silent for HEARTBEAT_GRACE
# seconds belongs to a dead worker and is marked failed by the next worker to start a trial.
HEARTBEAT_INTERVAL = 10
HEARTBEAT_GRACE = 30


def make_sampler(kind="tpe", seed=None, n_startup_trials=10):
    """The search's sampler.

    Parameters
    ----------
    kind : {"tpe", "random"}, default="tpe"
        TPE (Bergstra et al., NeurIPS 2011; Optuna's ``TPESampler``), multivariate and grouped so
        the conditional tree is modelled per branch (Falkner et al., 2018, as Optuna implements it),
        with constant liar so parallel workers do not pile onto one point; or random search, the
        baseline every smarter sampler must beat.
    seed : int or None, default=None
    n_startup_trials : int, default=10
        Trials before TPE models the history; the first ones not enqueued are drawn at random.
        Every Hyperband bracket's trials count: Optuna's TPE reads the whole study.

    Returns
    -------
    sampler : optuna.samplers.BaseSampler

    Notes
    -----
    Every TPE option is passed explicitly: their defaults differ between Optuna 4 and 5.
    """
    if kind == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    with warnings.catch_warnings():
        # multivariate and group are marked experimental since Optuna 2.2 and are still the way to
        # model a conditional space; the warning says nothing a user can act on.
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.samplers.TPESampler(
            n_startup_trials=n_startup_trials, multivariate=True, group=True, constant_liar=True,
            seed=seed,
        )


# Hyperband's smallest resource, in folds: the first rung a trial must pass (see make_pruner).
PRUNING_MIN_RESOURCE = 1


def make_pruner(pruning, n_folds, min_resource=None):
    """Hyperband (Li et al., JMLR 2018; Optuna's ``HyperbandPruner``) over folds or rows, or no pruning.

    Parameters
    ----------
    pruning : bool
    n_folds : int
        The maximum resource: a trial that reaches it is complete. Folds for k-fold CV; for a holdout,
        the last row step (27, see :func:`automl.search.resource_range`).
    min_resource : int or None, default=None
        The first rung. None: :data:`PRUNING_MIN_RESOURCE` folds (at most ``n_folds``).

    Returns
    -------
    pruner : optuna.pruners.BasePruner

    Notes
    -----
    Under CV the portfolio's trials are not pruned (:func:`automl.search.is_prunable`; on a holdout
    they are), but their scores fill the rungs, so they set the bar the sampled trials must pass.
    """
    if not pruning:
        return optuna.pruners.NopPruner()
    low = min(PRUNING_MIN_RESOURCE, n_folds) if min_resource is None else min_resource
    return optuna.pruners.HyperbandPruner(min_resource=low, max_resource=n_folds, reduction_factor=3)


def open_storage(storage, workdir, heartbeat=(HEARTBEAT_INTERVAL, HEARTBEAT_GRACE)):
    """The study's storage: a local journal file by default, else what the user named.

    Parameters
    ----------
    storage : str, optuna.storages.BaseStorage or None
        None: a journal file in ``workdir`` (safe for several processes on one machine). A string
        with ``://`` is an RDB URL (``sqlite:///...``, ``postgresql://...``), opened with heartbeats
        so that a trial of a killed worker is marked failed (Optuna's ``RDBStorage``); another
        string is a journal file path (``.journal``, ``.log``), except that a ``.db``/``.sqlite``
        path is refused with the URL to write instead; a storage object is used as is.
        ``postgresql://`` (or ``postgres://``) without a driver name means psycopg 3 when psycopg2
        is not installed (the ``postgres`` extra installs psycopg 3).
    workdir : path-like
    heartbeat : (int, int), default=(HEARTBEAT_INTERVAL, HEARTBEAT_GRACE)
        Seconds between heartbeats and seconds of silence after which a running trial is stale.

    Returns
    -------
    storage : optuna.storages.BaseStorage
    """
    if storage is None:
        storage = os.path.join(workdir, "study.journal")
    if not isinstance(storage, (str, os.PathLike)):
        return storage
    if "://" not in str(storage):
        check_storage_spelling(storage)
        return JournalStorage(JournalFileBackend(str(storage)))
    interval, grace = heartbeat
    with warnings.catch_warnings():
        # Heartbeats are marked experimental since Optuna 2.9 and are how it detects a dead worker.
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.storages.RDBStorage(_with_driver(str(storage)), heartbeat_interval=interval,
                                          grace_period=grace)


def check_storage_spelling(storage):
    """Refuse a SQLite file given as a bare path (read as a journal, it fails deep inside with a UnicodeDecodeError).

    Raises
    ------
    ValueError
        For a string without ``://`` ending in ``.db``, ``.sqlite`` or ``.sqlite3``; the message gives the URL.
    """
    if isinstance(storage, (str, os.PathLike)) and "://" not in str(storage) and str(storage).endswith(
            (".db", ".sqlite", ".sqlite3")):
        raise ValueError(f"storage {str(storage)!r} looks like a SQLite file: write it as the URL "
                         f"'sqlite:///{storage}'. A path without '://' is taken for an Optuna journal file.")


def _with_driver(url):
    # SQLAlchemy reads a bare postgresql:// as psycopg2, which we do not install; psycopg 3 is ours.
    # postgres:// (Heroku's and libpq's spelling) is no longer a SQLAlchemy dialect name.
    scheme, rest = url.split("://", 1)
    if scheme in ("postgresql", "postgres") and importlib.util.find_spec("psycopg2") is None:
        return "postgresql+psycopg://" + rest
    return "postgresql://" + rest if scheme == "postgres" else url


def heartbeat_of(storage):
    """``(interval, grace)`` seconds of a storage's heartbeat, or None when it has none (journal, memory)."""
    rdb = getattr(storage, "_backend", storage)  # Optuna wraps an RDBStorage in a cache
    interval = getattr(rdb, "heartbeat_interval", None)
    if interval is None:
        return None
    return interval, rdb.grace_period or 2 * interval  # Optuna's default grace


def count_started(storage, study_name):
    """Trials of the study that have started (complete, pruned, failed or running)."""
    study = optuna.load_study(study_name=study_name, storage=storage)
    return len(study.get_trials(deepcopy=False, states=_STARTED))


def prepare_study(storage, study_name, direction, configs, families=None, metric=None):
    """Create the study, or load it to continue it, and enqueue ``configs`` not already tried.

    Parameters
    ----------
    storage : str or optuna.storages.BaseStorage
    study_name : str
    direction : {"maximize", "minimize"}
    configs : list of dict
        Parameter dicts (the portfolio); one that matches an existing trial is skipped. Each is
        enqueued with the user attribute ``portfolio``, which exempts it from pruning.
    families : list of str or None
        The choices of the root knob ``"model"``, in order; checked against the study's trials.
    metric : str or None
        The metric's name, recorded by the first fit (user attribute ``metric``) and checked by the next.

    Raises
    ------
    ValueError
        If the study's trials chose their model among other families: Optuna cannot change a
        categorical knob's choices within a study, and every new trial would fail. If the study was made
        for another metric, or the other direction: a loaded study keeps its direction (Optuna ignores the
        one asked for), so the search would rank the worst trials first, and TPE would model two metrics'
        scores as one.
    """
    with quiet_optuna():
        study = optuna.create_study(storage=storage, study_name=study_name, direction=direction,
                                    load_if_exists=True)
        _check_metric(study, direction, metric)
        _check_families(study, families)
        for config in configs:
            study.enqueue_trial(config, user_attrs={"portfolio": True}, skip_if_exists=True)


def _check_metric(study, direction, metric):
    held, made = study.user_attrs.get("metric"), study.direction.name.lower()
    if made != direction or (None not in (held, metric) and held != metric):
        raise ValueError(
            f"Study {study.study_name!r} was made to {made} {repr(held) if held else 'its metric'}; this fit "
            f"would {direction} {metric!r}. A continued study keeps its metric: give this fit a new study_name "
            "(in a retraining job, [search] study_name), or the study's metric.")
    if held is None and metric is not None:
        study.set_user_attr("metric", metric)


def _check_families(study, families):
    if families is None:
        return
    for trial in study.get_trials(deepcopy=False):
        before = trial.distributions.get("model")
        if before is not None and list(before.choices) != list(families):
            raise ValueError(
                f"Study {study.study_name!r} holds trials that chose their model among {list(before.choices)}; "
                f"this fit offers {list(families)} (another include=, or data of another size: SVC/SVR stop at "
                "5,000 rows). Optuna cannot change a knob's choices within a study, so every trial would fail: "
                "give this fit a new study_name, or the same families.")


def in_memory_copy(storage, study_name):
    """The study copied into an ``InMemoryStorage``, to outlive a temporary storage."""
    memory = optuna.storages.InMemoryStorage()
    with quiet_optuna():
        optuna.copy_study(from_study_name=study_name, from_storage=storage, to_storage=memory)
    return optuna.load_study(study_name=study_name, storage=memory)


class _FailedTrialFilter(logging.Filter):
    """Drop Optuna's two warnings per failed trial (the second one with the traceback before it).

    The trial's ``error`` user attribute carries the reason to the leaderboard, MLflow and the fit's
    one summary warning (:func:`failed_trials_summary`); the traceback goes to our logger at DEBUG.
    """

    def filter(self, record):
        message = record.getMessage()
        return not (message.startswith("Trial ") and " failed with " in message)


_FAILED_TRIAL_FILTER = _FailedTrialFilter()


@contextmanager
def quiet_optuna():
    """Silence Optuna's per-trial lines while a study runs, then restore.

    Its INFO lines (our progress line replaces them) and its warnings on failed trials (the leaderboard
    and one summary warning say why a trial failed: :class:`_FailedTrialFilter`).
    """
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    source = logging.getLogger("optuna.study._optimize")  # the module that logs them (Optuna 5.0)
    added = _FAILED_TRIAL_FILTER not in source.filters  # nested: the outermost call removes it
    source.addFilter(_FAILED_TRIAL_FILTER)
    try:
        yield
    finally:
        optuna.logging.set_verbosity(verbosity)
        if added:
            source.removeFilter(_FAILED_TRIAL_FILTER)


def leaderboard(study, weights=None, search_key=None):
    """One row per trial, best first: the table users read after a fit.

    Parameters
    ----------
    study : optuna.Study
    weights : dict of int -> float or None
        Ensemble weight by trial number (absent trials get 0).
    search_key : str or None
        Only trials with this ``search_key`` user attribute (see :func:`~automl.search.search_key`):
        a continued study also holds trials scored on other data or folds. None: every trial.

    Returns
    -------
    leaderboard : DataFrame of shape (n_started_trials, 10)
        Columns ``trial, family, state, mean, std, folds, seconds, weight, params, note``; ``note``
        says why a trial stopped early (Hyperband, or the time budget) or how it failed. Complete
        trials come first, by mean CV score in the study's direction, then pruned trials (their
        running mean at the fold they stopped: fewer folds, so not comparable), then failed ones.
        Enqueued trials that never started are left out.
    """
    import pandas as pd

    weights = weights or {}
    started = study.get_trials(deepcopy=False, states=_STARTED)
    if search_key is not None:
        started = [t for t in started if t.user_attrs.get("search_key") == search_key]
    rows = [_leaderboard_row(t, weights.get(t.number, 0.0)) for t in started]
    columns = ["trial", "family", "state", "mean", "std", "folds", "seconds", "weight", "params", "note"]
    table = pd.DataFrame(rows, columns=columns)
    order = {"COMPLETE": 0, "PRUNED": 1, "RUNNING": 2, "FAIL": 3}
    table["_state"] = table["state"].map(order)
    maximize = study.direction.name == "MAXIMIZE"
    table["_key"] = -table["mean"] if maximize else table["mean"]
    table = table.sort_values(["_state", "_key", "trial"], na_position="last", kind="stable")
    return table.drop(columns=["_state", "_key"]).reset_index(drop=True)


def failed_trials_summary(board, most=3):
    """One sentence on the trials that failed with an error of their own, or None if none did.

    Trials stopped at the time budget or interrupted are left out: they are the budget's doing, not
    the pipeline's. Errors are counted by family and message, the most frequent first.

    Parameters
    ----------
    board : DataFrame
        A :func:`leaderboard`.
    most : int, default=3
        Kinds of error named; the rest are counted.
    """
    note = board["note"].fillna("")
    failed = board[(board["state"] == "FAIL") & ~note.isin(["interrupted", ""])
                   & ~note.str.startswith(("failed with no error", STOPPED_AT_DEADLINE))]
    if failed.empty:
        return None
    # A trial that failed before choosing its family has none: counted all the same.
    kinds = failed.fillna({"family": "?"}).groupby(["family", "note"], sort=False).size()
    kinds = kinds.sort_values(ascending=False, kind="stable")
    named = "; ".join(f"{family} x{count}: {note[:200]}" for (family, note), count in kinds.iloc[:most].items())
    more = f"; and {len(kinds) - most} other kind(s)" if len(kinds) > most else ""
    return (f"{len(failed)} of {len(board)} trials failed ({named}{more}). Each error is in leaderboard_['note'] "
            "and the trial's MLflow run; the traceback is logged at DEBUG by automl.search.objective. Leave a "
            "family that always fails out with include=.")


def _leaderboard_row(trial, weight):
    scores = trial.user_attrs.get("fold_scores", [])
    seconds = trial.duration.total_seconds() if trial.duration is not None else np.nan
    params = {k: v for k, v in trial.params.items() if k != "model"}
    return [
        trial.number, trial.user_attrs.get("family", trial.params.get("model")), trial.state.name,
        # One fold has no spread to report: NaN, not a zero that reads as certainty.
        float(np.mean(scores)) if scores else np.nan, float(np.std(scores)) if len(scores) > 1 else np.nan,
        len(scores), seconds, weight, params, _note(trial, len(scores)),
    ]


# How the leaderboard's note starts for a trial the time budget stopped (Optuna's PRUNED, as Hyperband's are).
BUDGET_NOTE = "stopped by the time budget"


def _note(trial, folds):
    rows = trial.user_attrs.get("rows")  # a holdout trial: its resource is rows
    if trial.state == TrialState.PRUNED:
        by = BUDGET_NOTE if trial.user_attrs.get("stopped") else "stopped by Hyperband"
        if rows is None:
            return f"{by} after {folds} fold(s)"
        kept = trial.user_attrs.get("model_rows")
        return f"{by} after {rows:,} rows" + ("; its model on them is an ensemble candidate" if kept else "")
    kept = trial.user_attrs.get("model_rows")
    if trial.state == TrialState.FAIL and kept and trial.user_attrs.get("error") == STOPPED_AT_DEADLINE:
        # Its worker was stopped during a rung after the first (search.load_oof).
        return f"{STOPPED_AT_DEADLINE} during a rung; its model after {kept:,} rows is an ensemble candidate"
    if trial.state == TrialState.FAIL and "error" not in trial.user_attrs:
        # Optuna fails a trial without a word when its heartbeat stops or the process is interrupted.
        return "failed with no error recorded: its worker was interrupted, killed or cut off (no heartbeat)"
    return trial.user_attrs.get("error", "")
