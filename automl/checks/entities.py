"""Columns that name an entity whose rows repeat (a patient, a customer): the leak of grouped rows in shuffled folds.

When a table holds several rows per entity and ``fit`` is not told (no ``groups``), shuffled folds put some of
an entity's rows in training and the others in validation: every score is inflated, and most for the models
that memorise. The entity is often a column of ``X`` itself. A column is a candidate when it repeats many
values on a few rows each that agree on the target (:func:`entity_candidates`); it is reported when a small forest scores clearly
better on the search's shuffled folds than on folds that keep each of its values whole
(:func:`entity_evidence`): the figure is the inflation itself, as the issue asks (shuffled against grouped).
Both leak checks call it with their own baseline model and score (ROC AUC, R^2).
"""

import numpy as np
import pandas as pd
from sklearn.model_selection import GroupKFold, KFold


# A candidate repeats at least ENTITY_MIN_LEVELS values on two or more rows, those rows are at least
# ENTITY_MIN_REPEATED_SHARE of the table, and its values hold ENTITY_MAX_MEAN_ROWS rows or fewer on average
# (an entity, not a category such as a city of thousands of rows). Of the candidates, the MAX_ENTITY_COLUMNS
# with the most values are scored (a forest fit each, beside the one on shuffled folds).
ENTITY_MIN_LEVELS = 30
ENTITY_MIN_REPEATED_SHARE = 0.5
ENTITY_MAX_MEAN_ROWS = 20.0
# ... and its rows of one value agree on the target at least this share of the way from chance to full.
ENTITY_MIN_AGREEMENT = 0.5
MAX_ENTITY_COLUMNS = 2
# Each candidate is scored on about this many rows, its values whole, in this many folds.
ENTITY_SAMPLE_ROWS = 2_000
ENTITY_FOLDS = 3
# Reported from this gap between the shuffled and the grouped score (ROC AUC or R^2); high from the second.
ENTITY_INFLATION = 0.02
ENTITY_INFLATION_HIGH = 0.05


def entity_candidates(X, y, profile, random_state=0):
    """Columns of ``X`` that may name an entity: categorical, or numeric holding whole numbers, that repeat many
    values on a few rows each, and whose rows of one value agree on the target far more than chance.

    At most :data:`MAX_ENTITY_COLUMNS`, those with the most values first. Agreement is the share of rows
    holding their value's most common class (regression: the share of the target's variance between values,
    eta squared), among values of two or more rows; chance is the same figure with ``y`` shuffled (seeded).
    A measurement with repeated values (an age, a count of lines) agrees near chance; a patient's rows do not.

    Returns
    -------
    candidates : list of (str, dict)
        Column and its figures (``n_values``, ``n_repeated_values``, ``mean_rows_per_value``,
        ``target_agreement``, ``chance_agreement``).
    """
    regression = profile.task == "regression"
    shuffled_y = np.random.default_rng(random_state).permutation(y)
    found = []
    for column in X.columns:
        if profile.kinds.get(column) not in ("categorical", "numeric") or column in profile.identifier_columns:
            continue
        values = X[column]
        if values.dtype != object and not np.all(np.isnan(v := values.to_numpy(dtype=float)) | (v == np.round(v))):
            continue
        codes = pd.factorize(values)[0]
        sizes = np.bincount(codes[codes >= 0])
        repeated = sizes >= 2
        if (repeated.sum() < ENTITY_MIN_LEVELS or sizes[repeated].sum() < ENTITY_MIN_REPEATED_SHARE * len(values)
                or sizes.mean() > ENTITY_MAX_MEAN_ROWS):
            continue
        rows = (codes >= 0) & repeated[np.maximum(codes, 0)]
        agreement = _agreement(codes[rows], y[rows], regression)
        chance = _agreement(codes[rows], shuffled_y[rows], regression)
        if agreement - chance < ENTITY_MIN_AGREEMENT * (1.0 - chance):
            continue
        found.append((column, {"n_values": len(sizes), "n_repeated_values": int(repeated.sum()),
                               "mean_rows_per_value": round(float(sizes.mean()), 4),
                               "target_agreement": round(agreement, 4), "chance_agreement": round(chance, 4)}))
    found.sort(key=lambda item: -item[1]["n_values"])
    return found[:MAX_ENTITY_COLUMNS]


def _agreement(codes, y, regression):
    """How far rows of one value share the target: the majority class's share, or eta squared."""
    _, codes = np.unique(codes, return_inverse=True)
    if regression:
        sizes = np.bincount(codes)
        means = np.bincount(codes, weights=y) / sizes
        total = np.sum((y - y.mean()) ** 2)
        return float(1.0 - np.sum((y - means[codes]) ** 2) / total) if total > 0 else 0.0
    n_classes = int(y.max()) + 1
    counts = np.bincount(codes * n_classes + y, minlength=(codes.max() + 1) * n_classes)
    return float(counts.reshape(-1, n_classes).max(axis=1).sum() / len(y))


def entity_evidence(X, y, candidates, baseline, random_state=0):
    """The candidates on whose values grouped folds score clearly worse than shuffled folds, with the figures.

    Each candidate is scored on a seeded sample of its values, whole (at least :data:`ENTITY_SAMPLE_ROWS`
    rows, or all): a sample of rows would leave most entities one row, and hide the very leak looked for.
    On those rows, ``baseline`` scores :data:`ENTITY_FOLDS` shuffled folds and as many folds that keep each
    value whole (``GroupKFold``); the gap is the inflation.

    Parameters
    ----------
    X : DataFrame of shape (n_samples, n_features)
        The validated rows.
    y : ndarray of shape (n_samples,)
        The encoded target.
    candidates : list of (str, dict)
        From :func:`entity_candidates`.
    baseline : callable
        ``baseline(X, y, folds) -> float``: the leak check's model on all columns, higher is better.
    random_state : int, default=0

    Returns
    -------
    found : list of (str, dict, str)
        Column, evidence (the candidate's figures, ``shuffled_folds_score``, ``grouped_folds_score``,
        ``inflation``, ``n_rows_scored``) and severity ("high" from :data:`ENTITY_INFLATION_HIGH`).
    """
    found, rng = [], np.random.default_rng(random_state)
    for column, figures in candidates:
        codes = pd.factorize(X[column])[0]
        sizes = np.bincount(codes[codes >= 0])
        order = rng.permutation(len(sizes))
        chosen = order[:np.searchsorted(np.cumsum(sizes[order]), ENTITY_SAMPLE_ROWS) + 1]
        rows = np.flatnonzero(np.isin(codes, chosen))
        Xe, ye = X.iloc[rows].reset_index(drop=True), y[rows]
        shuffled = baseline(Xe, ye, list(KFold(ENTITY_FOLDS, shuffle=True, random_state=random_state).split(Xe)))
        grouped = baseline(Xe, ye, list(GroupKFold(ENTITY_FOLDS).split(Xe, ye, codes[rows])))
        gap = shuffled - grouped
        if gap >= ENTITY_INFLATION:
            evidence = {**figures, "shuffled_folds_score": round(shuffled, 4), "grouped_folds_score": round(grouped, 4),
                        "inflation": round(gap, 4), "n_rows_scored": len(rows), "n_rows": len(y)}
            found.append((column, evidence, "high" if gap >= ENTITY_INFLATION_HIGH else "medium"))
    return found


def entity_message(column, evidence, score_name):
    """The finding's sentence: the figures, what they mean, what to do."""
    return (f"Column {column!r} repeats {evidence['n_repeated_values']:,} values on "
            f"{evidence['mean_rows_per_value']:.1f} rows each on average, and a model scores {score_name} "
            f"{evidence['shuffled_folds_score']:.3f} on shuffled folds but {evidence['grouped_folds_score']:.3f} on "
            f"folds that keep each value whole (on {evidence['n_rows_scored']:,} of its rows): its rows look like repeated records of one entity, which "
            f"shuffled CV scores as if seen. Pass groups=X[{column!r}] to fit (and drop the column when new rows "
            "come from new entities).")
