"""A search published in its study, so that ``automl worker`` processes on any machine can join it.

A fit publishes its search in the study itself, as the user attribute ``automl_search``
(:class:`SharedSearch`): the task, the settings that rebuild its folds and search space, the
``search_key`` of its data, folds and metric, its deadline and trial cap, the folder for OOF
predictions and the MLflow parent run. It writes a sign of life beside it while it runs, and
closes it when done. :mod:`automl.search.worker` reads it to join.
"""

import logging
import os
import socket
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass

import optuna

from ..exceptions import DataValidationError
from .liveness import worker_alive
from .objective import CVObjective, resource_range
from .setup import prepare_search
from .study import heartbeat_of, make_pruner, make_sampler, quiet_optuna
from .threads import repeating

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
        Estimator parameters that rebuild the search: ``metric, cv, random_state, validation, include, sampler,
        pruning`` (``cv`` is 1 for a holdout, unused then).
    search_key : str
        Digest of the data, folds and metric (:func:`automl.search.search_key`).
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
    def of(cls, setup, *, task, settings, n_startup_trials, storage, oof_dir, deadline, max_trials, grace=5.0,
           tracker=None, target_name=None, oof_root=None, not_joinable=None):
        """The search a fit is about to run, once its ``setup`` is made.

        Parameters
        ----------
        setup : SearchSetup
            From :func:`automl.search.prepare_search`: the metric, folds, seed and ``search_key``.
        task : {"classification", "regression"}
        settings : dict
            ``include, sampler, pruning``: what a worker needs beyond ``setup`` to rebuild the search.
        n_startup_trials, max_trials, deadline, grace, oof_root, not_joinable
            As the attributes of the same names.
        storage : optuna.storages.BaseStorage
            The study's storage (its heartbeat is published).
        oof_dir : path-like
            The OOF folder, made absolute.
        tracker : MLflowTracker, NullTracker or None, default=None
            The fit's tracker; its parent run is published when there is one.
        target_name : str or None, default=None
        """
        mlflow = None
        if tracker is not None and tracker.parent_run_id is not None:
            mlflow = {"tracking_uri": tracker.tracking_uri, "experiment_id": tracker.experiment_id,
                      "parent_run_id": tracker.parent_run_id}
        return cls(
            task=task,
            params={"metric": setup.metric.name, "cv": "time" if setup.time_ordered else len(setup.folds),
                    "random_state": int(setup.seed), "validation": setup.validation,
                    "grouped": setup.groups is not None, "weighted": setup.sample_weight is not None,
                    "time_column": setup.time_column, **settings},
            search_key=setup.search_key, fingerprint=setup.profile.fingerprint,
            n_samples=int(setup.profile.n_samples), n_startup_trials=n_startup_trials, max_trials=max_trials,
            deadline=deadline, grace=grace,
            oof_dir=os.path.abspath(oof_dir), oof_root=None if oof_root is None else os.path.abspath(oof_root),
            heartbeat=_as_list(heartbeat_of(storage)), mlflow=mlflow,
            target=target_name if isinstance(target_name, str) else None,
            not_joinable=not_joinable, fit=f"{socket.gethostname()}:{os.getpid()}",
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
        study = _study(storage, study_name)  # here: quiet_optuna is not thread-safe, the trials' is running
        with repeating(lambda: study.set_user_attr(BEAT_ATTR, time.time()), FIT_BEAT, "automl-search-beat"):
            yield

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

    def pruner(self, setup):
        """Hyperband over the rungs of ``setup``'s folds (folds, or a holdout's rows), or no pruning."""
        low, high = resource_range(setup.folds)
        return make_pruner(self.params["pruning"], high, low)

    def setup(self, X, y, groups=None, sample_weight=None):
        """This search's setup rebuilt from a worker's copy of the data (:func:`automl.search.prepare_search`).

        ``groups`` are the rows' group labels, which a fit given groups needs again (the folds follow them);
        ``sample_weight`` the rows' weights of a weighted fit.

        Raises
        ------
        DataValidationError
            If the data gives another ``search_key`` than the fit's: other rows, order, values or
            target (the message compares the fingerprints), or other folds or metric; or if the fit's
            folds were grouped and ``groups`` is None, or the other way round; the same for weights.
        """
        p = self.params
        _same_kind(p.get("grouped", False), groups, "The fit's folds keep groups whole: give this worker the same "
                   "groups (automl worker --groups COLUMN).", "The fit's folds are not grouped: start this worker "
                   "without groups.")
        _same_kind(p.get("weighted", False), sample_weight, "The fit's trials are weighted: give this worker the "
                   "same weights (automl worker --weight COLUMN).", "The fit's trials are not weighted: start this "
                   "worker without weights.")
        setup = prepare_search(X, y, task=self.task, metric=p["metric"], cv=p["cv"], random_state=p["random_state"],
                               include=p["include"], validation=p.get("validation", "cv"), groups=groups,
                               time_column=p.get("time_column"), sample_weight=sample_weight)
        if setup.search_key != self.search_key:
            profile = setup.profile
            same = profile.fingerprint == self.fingerprint
            raise DataValidationError(
                f"This worker's data does not match the search's: {profile.n_samples} rows with "
                f"fingerprint {profile.fingerprint} against {self.n_samples} rows with fingerprint "
                f"{self.fingerprint}" + (" (same data, other folds or metric)" if same else "")
                + ". Give the worker the very file (rows, order, values, target) the fit was given.")
        return setup

    def objective(self, setup, oof_dir, deadline):
        """The objective on ``setup`` (see :func:`automl.search.prepare_search`): k-fold CV or a holdout."""
        return CVObjective(setup.X, setup.y, setup.folds, setup.profile, setup.specs, setup.metric, oof_dir,
                           deadline, setup.seed, search_key=self.search_key, sample_weight=setup.sample_weight)


def _same_kind(fit_has, given, missing, extra):
    """Refuse a worker given groups or weights when the fit had none (``extra``), or none when it had (``missing``)."""
    if fit_has != (given is not None):
        raise DataValidationError(missing if fit_has else extra)


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
