"""3. How it is searched: trials scored by CV on shared folds (one holdout on large tables), in worker processes
sharing one Optuna study.

In the order a fit uses them: :func:`prepare_search` (data, folds, families, metric, seed: what every
trial shares; the splits themselves in :mod:`~automl.search.splits`), the metric (:mod:`~automl.search.scoring`), the study with its storage, sampler and
pruner (:mod:`~automl.search.study`), the CV objective with Hyperband's rungs and the OOF predictions
(:mod:`~automl.search.objective`), :func:`run_search` (worker processes, deadlines,
:mod:`~automl.search.liveness` for trials whose worker died), and the search published for
``automl worker`` processes to join (:mod:`~automl.search.shared`, :mod:`~automl.search.worker`).
"""

from .liveness import fail_running, wait_for_running, worker_alive
from .objective import (
    ENQUEUED_ATTRS, CVObjective, aligned_proba, is_holdout, is_prunable, load_trial_model, model_path, oof_path,
    predictions, resource_range, scored_rows, search_key,
)
from .run import ProgressLine, SearchResult, load_oof, run_search
from .scoring import CLASSIFICATION_METRICS, REGRESSION_METRICS, Metric, get_metric
from .setup import SearchSetup, prepare_search
from .splits import TIME_SPLITS, check_group_counts, default_splitter, make_folds, n_splits_of, time_order
from .shared import SEARCH_ATTR, SharedSearch
from .study import (
    BUDGET_NOTE, HEARTBEAT_GRACE, HEARTBEAT_INTERVAL, PRUNING_MIN_RESOURCE, check_storage_spelling, count_started,
    failed_trials_summary, heartbeat_of, in_memory_copy, leaderboard, make_pruner, make_sampler, open_storage,
    prepare_study, quiet_optuna,
)
from .threads import resolve_n_jobs, threads_per_job
from .worker import WorkerResult, run_worker

__all__ = [
    "BUDGET_NOTE", "CLASSIFICATION_METRICS", "ENQUEUED_ATTRS", "HEARTBEAT_GRACE", "HEARTBEAT_INTERVAL",
    "PRUNING_MIN_RESOURCE", "REGRESSION_METRICS", "SEARCH_ATTR", "TIME_SPLITS", "CVObjective", "Metric", "ProgressLine",
    "SearchResult", "SearchSetup", "SharedSearch", "WorkerResult", "aligned_proba", "check_group_counts",
    "check_storage_spelling",
    "count_started", "default_splitter", "fail_running", "failed_trials_summary", "get_metric", "heartbeat_of",
    "in_memory_copy",
    "is_holdout", "is_prunable", "leaderboard", "load_oof", "load_trial_model", "make_folds", "make_pruner", "make_sampler",
    "model_path", "n_splits_of", "oof_path", "open_storage", "predictions", "prepare_search", "prepare_study", "quiet_optuna",
    "resource_range", "run_search", "run_worker", "scored_rows", "search_key", "resolve_n_jobs", "threads_per_job", "time_order", "wait_for_running", "worker_alive",
]
