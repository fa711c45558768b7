"""The retraining job's data: the snapshot (files or a SQL query), its fingerprint, its holdout."""

import glob
import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..data import check_sample_weight, kept_weights
from ..exceptions import DataValidationError, plain_repr
from ..search import check_group_counts

__all__ = ["Split", "check_columns", "load_snapshot", "snapshot_fingerprint", "split_holdout"]


def load_snapshot(config):
    """The snapshot as one DataFrame: the files matching ``data.path`` (in name order) or the SQL query.

    Raises
    ------
    FileNotFoundError
        If no file matches ``data.path``.
    DataValidationError
        If a file cannot be read as CSV or Parquet (the file is named) or the snapshot has no rows.
    """
    if config.sql_query:
        import sqlalchemy

        engine = sqlalchemy.create_engine(config.sql_url)
        try:
            with engine.connect() as connection:
                frame = pd.read_sql(sqlalchemy.text(config.sql_query), connection)
        finally:
            engine.dispose()
    else:
        files = sorted(Path(p) for p in glob.glob(str(config.path)))
        if not files:
            raise FileNotFoundError(f"No file matches data.path = {str(config.path)!r}.")
        frames = [_read_file(f) for f in files]
        for path, part in zip(files[1:], frames[1:]):
            if list(part.columns) != list(frames[0].columns):
                missing = sorted(set(map(str, frames[0].columns)) - set(map(str, part.columns)))
                extra = sorted(set(map(str, part.columns)) - set(map(str, frames[0].columns)))
                raise DataValidationError(f"{path} has other columns than {files[0]} (missing {missing}, extra "
                                          f"{extra}, or another order): the files of a snapshot must share them.")
        frame = pd.concat(frames, ignore_index=True)
    if frame.empty:
        raise DataValidationError("The snapshot has no rows.")
    return frame


def _read_file(path):
    try:
        if path.suffix == ".parquet":
            return pd.read_parquet(path)
        return pd.read_csv(path)
    except Exception as exc:
        raise DataValidationError(f"Cannot read {path} as {'Parquet' if path.suffix == '.parquet' else 'CSV'}: "
                                  f"{type(exc).__name__}: {exc}") from exc


def snapshot_fingerprint(frame):
    """16 hex characters of a sha256 over the snapshot's column names and values (row order counts)."""
    digest = hashlib.sha256("|".join(map(str, frame.columns)).encode())
    digest.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class Split:
    """A snapshot cut into training rows and the holdout (:func:`split_holdout`).

    ``groups`` and ``weight`` (Series, None without ``data.groups``, ``data.weight``) are the columns taken
    out of ``X``; ``weight_holdout`` weighs the holdout's score.
    """

    X: pd.DataFrame
    y: pd.Series
    X_holdout: pd.DataFrame
    y_holdout: pd.Series
    description: str
    groups: pd.Series | None = None
    weight: pd.Series | None = None
    weight_holdout: np.ndarray | None = None

    @property
    def roles(self):
        """The columns of the snapshot that play a role other than feature or target (groups, weight)."""
        return tuple(s.name for s in (self.groups, self.weight) if s is not None)


def split_holdout(frame, config, task="classification"):
    """Training rows and the holdout of the newest rows (by ``time_column``, else the last rows).

    The time column only orders the rows; it is not a feature (a model would extrapolate it). The
    groups and weight columns are not features either. The holdout is the newest rows with groups too:
    it must be rows neither model trained on, and the champion trained on the older rows of the same
    groups (holding out whole groups would put those rows in the holdout and favour the champion).

    Parameters
    ----------
    frame : DataFrame
        The snapshot, in file order.
    config : JobConfig
    task : {"classification", "regression"}
        The job's task: the class checks below are for classification only.

    Returns
    -------
    split : Split

    Raises
    ------
    DataValidationError
        If the target, time, groups or weight column is missing (the columns present are listed), the
        target or groups column has a missing value, the time column has values that are not dates,
        the target holds one value only, or for regression a value that is not a finite number (the
        rows named), too few rows are left on either side, the holdout holds one class only (of
        positive weight), or one target value only where the metric is R^2 (undefined there), the
        weights are invalid, or all zero on the training rows or on the holdout, or the training rows
        cannot make the grouped folds of ``[search] cv`` (:func:`automl.search.check_group_counts`).
    """
    check_columns(frame, config)
    if task == "regression":
        frame = frame.assign(**{config.target: _numeric_target(frame[config.target], config.target)})
    if frame[config.target].nunique() < 2:
        raise DataValidationError(f"The target column {config.target!r} holds one value on every row of the "
                                  f"snapshot ({plain_repr(frame[config.target].iloc[0])}): there is nothing to learn.")
    if config.weight is not None:  # rows numbered as in the snapshot, before any reordering
        frame = frame.assign(**{config.weight: _checked_weights(frame[config.weight], config.weight)})
    frame, order = _in_time_order(frame, config.time_column)
    n_hold = int(np.ceil(config.holdout_size * len(frame)))
    if n_hold < 2 or len(frame) - n_hold < 10:
        raise DataValidationError(f"The snapshot's {len(frame)} rows cannot give a holdout of {config.holdout_size:g} "
                                  "with at least 2 holdout and 10 training rows.")
    train, hold = frame.iloc[:-n_hold], frame.iloc[-n_hold:]
    what = f"{n_hold} newest rows by {order}"
    weight_holdout = None if config.weight is None else _holdout_weights(train, hold, config, what)
    counted = hold[config.target] if weight_holdout is None else hold[config.target][weight_holdout > 0]
    if counted.nunique() < 2 and (task == "classification" or config.metric == "r2"):
        one = "one class only" if task == "classification" else "one target value only (R^2 is undefined there)"
        raise DataValidationError(f"The holdout ({what}) holds {one}"
                                  f"{' of positive weight' if weight_holdout is not None else ''} "
                                  f"({plain_repr(counted.iloc[0])}): no comparison of models is possible on it; "
                                  "raise holdout_size.")
    if config.groups is not None:
        _check_groups(train, config, task)
    not_features = [c for c in (config.target, config.groups, config.weight) if c is not None]
    return Split(train.drop(columns=not_features), train[config.target], hold.drop(columns=not_features),
                 hold[config.target], f"the {what}", None if config.groups is None else train[config.groups],
                 None if config.weight is None else train[config.weight], weight_holdout)


def _numeric_target(column, name):
    """A regression target as float64: text that is not a number, and values that are not finite, refused
    with their rows (the snapshot's, 0-based), whichever side of the holdout they fall on."""
    values = pd.to_numeric(column, errors="coerce").astype("float64")
    bad = column[~np.isfinite(values.to_numpy())]
    if len(bad):
        shown = ", ".join(f"{plain_repr(v)} (row {i})" for i, v in list(bad.items())[:5])
        raise DataValidationError(f"The regression target column {name!r} has {len(bad)} value(s) that are not "
                                  f"finite numbers: {shown}{' ...' if len(bad) > 5 else ''}; fix or drop those rows.")
    return values


def check_columns(frame, config):
    """Refuse a snapshot without the config's target, time, groups or weight column, or with a missing target
    or groups value; the messages name the column (and list the snapshot's columns)."""
    for role, column in (("target", config.target), ("time", config.time_column), ("groups", config.groups),
                         ("weight", config.weight)):
        if column is not None and column not in frame.columns:
            raise DataValidationError(f"The {role} column {column!r} is not in the snapshot; its columns are "
                                      f"{list(map(str, frame.columns))}.")
    for role, column in (("target", config.target), ("groups", config.groups)):
        missing = 0 if column is None else int(frame[column].isna().sum())
        if missing:
            raise DataValidationError(f"{missing} row(s) of the snapshot have no value in the {role} column "
                                      f"{column!r}; drop or label them.")


def _check_groups(train, config, task):
    """The search's check of grouped folds, run before the fit so that it names the config's settings."""
    classes, codes = np.unique(train[config.target].to_numpy(), return_inverse=True)
    check_group_counts(train[config.groups].to_numpy(), codes, config.cv, task, name="[search] cv",
                       source=f"[data] groups = {config.groups!r} (training rows)", classes=classes)


def _holdout_weights(train, hold, config, what):
    """The holdout's weights, rescaled to a mean of 1 (a ROC AUC multiplies weights: 1e-300s underflow);
    refused when either side's rows all weigh 0."""
    for part, rows, use in (("training row (before the holdout)", train, "fit"),
                            (f"row of the holdout ({what})", hold, "score")):
        if not rows[config.weight].to_numpy().any():
            raise DataValidationError(f"Every {part} weighs 0 in {config.weight!r}: no {use} of them would "
                                      "count; check the weights or holdout_size.")
    return kept_weights(hold[config.weight].to_numpy(), np.ones(len(hold), dtype=bool))


def _checked_weights(column, name):
    try:
        return check_sample_weight(column, len(column))
    except DataValidationError as exc:
        raise DataValidationError(f"The weight column {name!r} of the snapshot: {exc}") from None


def _in_time_order(frame, time_column):
    """The rows sorted by ``time_column`` (stable), the column dropped; and what orders them."""
    if time_column is None:
        return frame, "file order"
    times = pd.to_datetime(frame[time_column], errors="coerce")
    bad = int(times.isna().sum())
    if bad:
        raise DataValidationError(f"{bad} value(s) of the time column {time_column!r} are missing or "
                                  "not dates; fix them or remove time_column from the config.")
    return frame.iloc[np.argsort(times.to_numpy(), kind="stable")].drop(columns=time_column), time_column
