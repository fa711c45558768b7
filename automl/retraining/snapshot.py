"""The retraining job's data: the snapshot (files or a SQL query), its fingerprint, its holdout."""

import glob
import hashlib
from pathlib import Path

import numpy as np
import pandas as pd

from ..exceptions import DataValidationError

__all__ = ["load_snapshot", "snapshot_fingerprint", "split_holdout"]


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


def split_holdout(frame, config):
    """Training rows and the holdout of the newest rows (by ``time_column``, else the last rows).

    The time column only orders the rows; it is not a feature (a model would extrapolate it).

    Returns
    -------
    X, y, X_holdout, y_holdout : DataFrame, Series, DataFrame, Series
    description : str
        Which rows the holdout is, for the summary.

    Raises
    ------
    DataValidationError
        If the target or time column is missing (the columns present are listed), the time column
        has values that are not dates, or too few rows are left on either side.
    """
    for role, column in (("target", config.target), ("time", config.time_column)):
        if column is not None and column not in frame.columns:
            raise DataValidationError(f"The {role} column {column!r} is not in the snapshot; its columns are "
                                      f"{list(map(str, frame.columns))}.")
    missing = int(frame[config.target].isna().sum())
    if missing:
        raise DataValidationError(f"{missing} row(s) of the snapshot have no value in the target column "
                                  f"{config.target!r}; drop or label them.")
    order = "file order"
    if config.time_column is not None:
        times = pd.to_datetime(frame[config.time_column], errors="coerce")
        bad = int(times.isna().sum())
        if bad:
            raise DataValidationError(f"{bad} value(s) of the time column {config.time_column!r} are missing or "
                                      "not dates; fix them or remove time_column from the config.")
        frame = frame.iloc[np.argsort(times.to_numpy(), kind="stable")].drop(columns=config.time_column)
        order = f"{config.time_column}"
    n_hold = int(np.ceil(config.holdout_size * len(frame)))
    if n_hold < 2 or len(frame) - n_hold < 10:
        raise DataValidationError(f"The snapshot's {len(frame)} rows cannot give a holdout of {config.holdout_size:g} "
                                  "with at least 2 holdout and 10 training rows.")
    train, hold = frame.iloc[:-n_hold], frame.iloc[-n_hold:]
    if hold[config.target].nunique() < 2:
        raise DataValidationError(f"The holdout ({n_hold} newest rows by {order}) holds one class only "
                                  f"({hold[config.target].iloc[0]!r}): no comparison of models is possible on it; "
                                  "raise holdout_size.")
    X, y = train.drop(columns=config.target), train[config.target]
    return X, y, hold.drop(columns=config.target), hold[config.target], f"the {n_hold} newest rows by {order}"
