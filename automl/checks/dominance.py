"""Model-level leak check: one column carrying most of a fitted model's permutation importance.

The data checks of :mod:`automl.checks.leakage` see a column alone; a leak that only shows together with
the other columns (bank-marketing's ``duration``, known only after the call, scores 0.81 ROC AUC
alone against 0.80 for the other 19 columns) shows here, as the column the model leans on. Whether
it is a leak depends on whether the column exists at prediction time, which only the user knows,
so the finding asks; honest strong columns are flagged too (titanic ``Sex``: 70% of the importance).
"""

import time

import numpy as np
import pandas as pd
from sklearn.inspection import permutation_importance
from sklearn.utils import check_random_state

from ..exceptions import LeakageWarning, warn_user
from ..search import REGRESSION_METRICS, Metric, aligned_proba, get_metric
from ..space import fit_quietly
from .leakage import MAX_FOLDS, LeakageReport, LeakFinding, _round, _stratified

__all__ = ["check_in_time", "check_model_dominance"]

MAX_PERMUTATION_ROWS, MIN_PERMUTATION_ROWS, N_REPEATS, DOMINANT_SHARE_HIGH = 2_000, 200, 3, 0.8
# Rows predicted a second time to split a prediction's cost into a fixed part and a part per row.
PROBE_ROWS = 20
# permutation_importance's own work per shuffle (copying, assigning the column) on top of the
# prediction: measured up to 1.3x the predicted cost on splice's portfolio pipelines.
PERMUTATION_OVERHEAD = 1.5


def check_model_dominance(model, X, y, folds, *, metric, random_state=None, threshold=0.5,
                          deadline=None) -> LeakageReport:
    """Flag a column carrying most of a model's permutation importance.

    The model is refit on the training part of at most ``MAX_FOLDS`` folds; on each held-out part
    every column is shuffled ``N_REPEATS`` times (at most ``MAX_PERMUTATION_ROWS`` rows) and the drop
    of the metric is its importance (:func:`sklearn.inspection.permutation_importance`). A column
    whose mean importance is more than ``threshold`` of the summed positive importances is reported:
    high above 0.8. A model leaning on one column is where a leak shows; whether it is one depends on
    whether the column exists at prediction time, which the message asks the user to check.

    Parameters
    ----------
    model : sklearn classifier or regressor, or a Pipeline
        Cloned and refit per fold; it must accept X as given.
    X : DataFrame of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
        Encoded labels 0 .. n_classes - 1, or the target values for a regression metric.
    folds : list of (ndarray, ndarray)
        (train, test) index pairs, e.g. the search's outer folds.
    metric : str or Metric
        A name for :func:`automl.search.scoring.get_metric`, or a Metric; losses are negated.
    random_state : int, RandomState instance or None, default=None
        Seed of the shuffles.
    threshold : float, default=0.5
        Share of the total positive importance above which a column is reported.
    deadline : float or None, default=None
        Wall-clock time (``time.time()``) to end by: no fold starts that the previous fold's
        duration says would end after it, and the rows shuffled are cut to what the time left
        allows (timed from predicting the fold's test part and its first ``PROBE_ROWS`` rows).
        If fewer than ``MIN_PERMUTATION_ROWS`` fit, the fold is not scored and, with no fold
        scored, the report says so in ``notes``.

    Returns
    -------
    report : LeakageReport
        Findings, and a note of what was scored (folds, rows, seconds).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from sklearn.linear_model import LogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> X = pd.DataFrame(rng.normal(size=(300, 3)), columns=["a", "b", "c"])
    >>> y = (X["c"] > 0).to_numpy(dtype=int)
    >>> folds = [(np.arange(100, 300), np.arange(100)), (np.arange(200), np.arange(200, 300))]
    >>> report = check_model_dominance(LogisticRegression(), X, y, folds, metric="roc_auc", random_state=0)
    >>> [(f.column, f.kind, f.severity) for f in report.findings]
    [('c', 'dominant_feature', 'high')]
    """
    if not isinstance(metric, Metric):
        metric = REGRESSION_METRICS.get(metric) or get_metric(metric, int(np.max(y)) + 1)
    regression = metric.task == "regression"
    y = np.asarray(y, dtype=float if regression else int)
    n_classes = 0 if regression else int(y.max()) + 1
    rng, importances, scores, started = check_random_state(random_state), [], [], time.time()

    def predict(estimator, X_part):
        return estimator.predict(X_part) if regression else aligned_proba(estimator, X_part, n_classes)

    def scorer(estimator, X_part, y_part):
        return metric.signed(y_part, predict(estimator, X_part))

    def timed_predict(estimator, rows):
        predict_started = time.time()
        return predict(estimator, X.iloc[rows]), (len(rows), time.time() - predict_started)

    n_rows, fold_seconds = [], 0.0
    for train, test in folds[:MAX_FOLDS]:
        # Not started when the last fold's pace says it would end past the deadline: a fit cannot be
        # stopped once begun, so a fold begun just before the deadline would overrun it by a whole fit.
        if deadline is not None and time.time() + fold_seconds >= deadline:
            break
        fold_started = time.time()
        fitted = fit_quietly(model, X.iloc[train], y[train])
        predicted, whole = timed_predict(fitted, test)
        scores.append(metric.signed(y[test], predicted))
        probe = None if deadline is None else timed_predict(fitted, test[:PROBE_ROWS])[1]
        rows = _rows_in_time(probe, whole, X.shape[1], deadline)
        if rows < min(MIN_PERMUTATION_ROWS, len(test)):
            break
        # Classes: stratified, so rare classes stay for the metric; regression: a plain random sample.
        test = np.sort(rng.permutation(test)[:rows]) if regression else test[_stratified(y[test], rows, rng)]
        result = permutation_importance(fitted, X.iloc[test], y[test], scoring=scorer, n_repeats=N_REPEATS,
                                        random_state=rng.randint(2**31 - 1))
        importances.append(result.importances_mean)
        n_rows.append(len(test))
        fold_seconds = time.time() - fold_started
    seconds = time.time() - started
    if not importances:
        return LeakageReport((), (f"Model check skipped: the time left ({seconds:.1f} s used) was too short "
                                  f"to shuffle {MIN_PERMUTATION_ROWS} rows per column.",))
    mean = pd.Series(np.mean(importances, axis=0), index=X.columns)
    figures = {"metric": metric.name, "score": _round(np.mean(scores)), "n_folds": len(importances),
               "n_repeats": N_REPEATS}
    note = (f"Model check: permutation importance on {len(importances)} held-out fold(s), "
            f"{_span(n_rows)} rows x {N_REPEATS} shuffles per column, {seconds:.1f} s.")
    return LeakageReport(tuple(_dominance_findings(mean, threshold, figures)), (note,))


def _span(values):
    low, high = min(values), max(values)
    return f"{low:,}" if low == high else f"{low:,}-{high:,}"


def _rows_in_time(probe, whole, n_columns, deadline):
    """Rows to shuffle: at most MAX_PERMUTATION_ROWS, fewer when the deadline allows no more.

    ``probe`` and ``whole`` are ``(rows, seconds)`` of two predictions of the fold's test part. A
    shuffle costs one prediction (plus :data:`PERMUTATION_OVERHEAD`), and a prediction costs a fixed
    part (a pipeline's per-call work: column selection, encoders) plus a part per row. Scaling the
    whole part's time by rows alone, as before, ignored the fixed part and ran over the deadline by
    up to 2x with fewer rows (splice, 60 columns).
    """
    if deadline is None:
        return MAX_PERMUTATION_ROWS
    (probe_rows, probe_seconds), (rows, seconds) = probe, whole
    if rows - probe_rows < PROBE_ROWS:
        # Too few rows apart to tell the parts: treat the slower prediction as the cost of any shuffle.
        per_row, fixed = 1e-6, max(probe_seconds, seconds)
    else:
        per_row = max((seconds - probe_seconds) / (rows - probe_rows), 1e-6)
        fixed = max(probe_seconds - per_row * probe_rows, 0.0)
    per_shuffle = (deadline - time.time()) / (n_columns * N_REPEATS * PERMUTATION_OVERHEAD)
    return int(min(MAX_PERMUTATION_ROWS, max(per_shuffle - fixed, 0.0) / per_row))


def _dominance_findings(importance, threshold, figures):
    positive = importance.clip(lower=0.0)
    total = float(positive.sum())
    share = positive / total if total > 0 else positive * 0.0
    findings = []
    for column in share[share > threshold].index:
        rest = total - positive[column]
        evidence = {"importance_share": _round(share[column]), "importance": _round(importance[column]),
                    "other_columns_importance": _round(rest), **figures}
        severity = "high" if share[column] > DOMINANT_SHARE_HIGH else "medium"
        findings.append(LeakFinding(str(column), "dominant_feature", severity, evidence, (
            f"Column {column!r} carries {share[column]:.0%} of the model's permutation importance "
            f"(shuffling it costs {importance[column]:.3g} {figures['metric']}, all other columns "
            f"together {rest:.3g}): check that it exists at prediction time, before the outcome."
        )))
    return findings


def check_in_time(pipeline, fold_seconds, X, y, folds, metric, seed, deadline):
    """Run :func:`check_model_dominance` if two folds' fits fit before ``deadline``; warn per finding.

    Parameters
    ----------
    pipeline : sklearn Pipeline
        Unfitted, e.g. the search's best trial rebuilt.
    fold_seconds : float
        Its measured seconds per CV fold (fit and score), to judge whether the check fits in time.
    X, y, folds, metric
        As for :func:`check_model_dominance`.
    seed : int
        Its ``random_state``.
    deadline : float or None
        Wall-clock time (``time.time()``) to end by; None runs the whole check.

    Returns
    -------
    report : LeakageReport
        With a note saying what was checked, or why the check was skipped.
    """
    if deadline is not None and time.time() + 2 * fold_seconds > deadline:
        return LeakageReport((), ("Model check skipped: the time budget left less than two folds' fit of the "
                                  f"best trial ({fold_seconds:.1f} s each).",))
    report = check_model_dominance(pipeline, X, y, folds, metric=metric, random_state=seed, deadline=deadline)
    for finding in report.findings:
        warn_user(finding.message, LeakageWarning)
    return report
