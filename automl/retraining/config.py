"""The retraining job's TOML configuration: read, check every key, fill the defaults.

A complete file (only ``data.target``, a data source and ``mlflow.model_name`` are required)::

    [data]
    path = "snapshots/*.csv"     # CSV or Parquet files, a glob; or sql_url + sql_query
    target = "defects"
    time_column = "date"         # optional: orders the rows; the holdout is the newest
    groups = "customer"          # optional: rows of one group stay on one side of every fold
    weight = "exposure"          # optional: row weights for every fit and score, the holdout's too

    [search]
    task = "auto"                # or "classification", "regression"; auto: the champion's task, else the
                                 # metric's, else regression for a numeric target of more than 20 values
    time_budget = 300            # seconds
    metric = "roc_auc"           # default: ROC AUC for two classes, log loss for more; RMSE for regression
    n_jobs = 2
    random_state = 0             # fixed, so a restarted job reuses the killed one's trials
    storage = "sqlite:///retrain/optuna.db"   # Optuna storage; default: work_dir/optuna.db
    study_name = "defects"       # default: the model name
    include = ["hgb", "lgbm"]    # model families; default: all installed
    cv = 5                       # folds: a number (shuffled; grouped with groups) or "time" (in time
                                 # order; not with groups); default "time" with time_column and no groups, else 5

    [mlflow]
    tracking_uri = "http://127.0.0.1:5000"    # default: sqlite:///<work_dir>/mlflow.db
    experiment_name = "automl-retrain"
    model_name = "defects"       # the registered model

    [promotion]
    margin = 0.002               # the challenger must beat the champion by this much
    holdout_size = 0.2           # share of the newest rows scored by both

    [job]
    work_dir = "retrain"         # lock, OOF predictions of the trials, defaults above
    summary = "retrain/summary.json"

Relative paths (``data.path``, ``job.work_dir``, ``job.summary``) are read from the config file's
folder, so a scheduler may start the job from anywhere. URLs are used as written.
"""

import math
from dataclasses import dataclass
from pathlib import Path

import tomllib

from ..exceptions import ConfigError

# section -> key -> (accepted types, required)
_NUMBER = (int, float)
SCHEMA = {
    "data": {"path": (str, False), "sql_url": (str, False), "sql_query": (str, False),
             "target": (str, True), "time_column": (str, False), "groups": (str, False), "weight": (str, False)},
    "search": {"task": (str, False), "time_budget": (_NUMBER, False), "n_trials": (int, False), "metric": (str, False),
               "n_jobs": (int, False), "random_state": (int, False), "storage": (str, False),
               "study_name": (str, False), "include": (list, False), "cv": ((int, str), False)},
    "mlflow": {"tracking_uri": (str, False), "experiment_name": (str, False), "model_name": (str, True)},
    "promotion": {"margin": (_NUMBER, False), "holdout_size": (_NUMBER, False)},
    "job": {"work_dir": (str, False), "summary": (str, False)},
}


@dataclass(frozen=True)
class JobConfig:
    """A checked retraining configuration, defaults filled in (see the module docstring)."""

    target: str
    model_name: str
    work_dir: Path
    summary: Path
    storage: str
    study_name: str
    tracking_uri: str
    path: Path | None = None
    sql_url: str | None = None
    sql_query: str | None = None
    time_column: str | None = None
    groups: str | None = None
    weight: str | None = None
    time_budget: float | None = 300.0
    n_trials: int | None = None
    metric: str | None = None
    include: tuple | None = None
    cv: int | str = 5
    n_jobs: int = 1
    random_state: int = 0
    experiment_name: str = "automl-retrain"
    margin: float = 0.0
    holdout_size: float = 0.2
    task: str = "auto"


def read_config(path):
    """Read and check the TOML file ``path``.

    Returns
    -------
    config : JobConfig

    Raises
    ------
    ConfigError
        If the file is missing or not TOML, or a section or key is unknown, missing, of the wrong
        type or out of range; the message names the file and the key.
    """
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"No config file at {path}.") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}.") from None
    values = _checked(raw, path)
    return _build(values, path.resolve().parent, path)


def _checked(raw, path):
    """Flatten ``[section] key`` to ``key`` after checking names and types against SCHEMA."""
    unknown = sorted(set(raw) - set(SCHEMA))
    if unknown:
        raise ConfigError(f"{path}: unknown section(s) {unknown}; the sections are {list(SCHEMA)}.")
    values = {}
    for section, keys in SCHEMA.items():
        given = raw.get(section, {})
        if not isinstance(given, dict):
            raise ConfigError(f"{path}: [{section}] must be a table of keys.")
        extra = sorted(set(given) - set(keys))
        if extra:
            raise ConfigError(f"{path}: unknown key(s) {extra} in [{section}]; its keys are {list(keys)}.")
        for key, (types, required) in keys.items():
            if key not in given:
                if required:
                    raise ConfigError(f"{path}: [{section}] {key} is required.")
                continue
            value = given[key]
            if not isinstance(value, types) or isinstance(value, bool) or _has_non_str(value):
                raise ConfigError(f"{path}: [{section}] {key} must be {_type_name(types)}, got {value!r}.")
            values[key] = value
    return values


def _has_non_str(value):
    return isinstance(value, list) and not all(isinstance(v, str) for v in value)


def _type_name(types):
    if types == (int, str):
        return 'an integer or "time"'
    return "a number" if types == _NUMBER else {str: "a string", int: "an integer", list: "a list of strings"}[types]


def _build(values, base, path):
    if ("path" in values) == ("sql_query" in values):
        raise ConfigError(f"{path}: [data] needs exactly one source: path, or sql_url with sql_query.")
    if ("sql_query" in values) != ("sql_url" in values):
        raise ConfigError(f"{path}: [data] sql_query and sql_url go together.")
    _check_range(values, "time_budget", 0, None, path, "search")
    _check_range(values, "n_trials", 1, None, path, "search", closed=True)
    _check_range(values, "n_jobs", 1, None, path, "search", closed=True)
    _check_range(values, "margin", 0, None, path, "promotion", closed=True)
    _check_range(values, "holdout_size", 0, 1, path, "promotion")
    work_dir = base / values.pop("work_dir", "automl-retrain")
    if "path" in values:
        values["path"] = base / values["path"]
    values["summary"] = base / values.pop("summary", str(work_dir / "summary.json"))
    values.setdefault("storage", f"sqlite:///{work_dir / 'optuna.db'}")
    values.setdefault("tracking_uri", f"sqlite:///{work_dir / 'mlflow.db'}")
    values.setdefault("study_name", values["model_name"])
    _check_names(values, path)
    _check_columns(values, path)
    values.setdefault("cv", "time" if "time_column" in values and "groups" not in values else 5)
    if values["cv"] != "time" and not (isinstance(values["cv"], int) and values["cv"] >= 2):
        raise ConfigError(f"{path}: [search] cv must be an integer >= 2 or \"time\", got {values['cv']!r}.")
    if values["cv"] == "time" and "groups" in values:
        raise ConfigError(f"{path}: [search] cv = \"time\" and [data] groups together are not supported (the "
                          "search refuses them); give cv a number for grouped folds (the holdout stays the newest "
                          "rows by time_column), or drop groups.")
    if "include" in values:
        values["include"] = tuple(values["include"])
    if "n_trials" in values and "time_budget" not in values:
        values["time_budget"] = None  # a trial count alone bounds the search
    return JobConfig(work_dir=work_dir, **values)


def _check_columns(values, path):
    """The data section's columns play one role each: a column cannot be the target and the weights."""
    roles = {}
    for key in ("target", "time_column", "groups", "weight"):
        if key in values:
            roles.setdefault(values[key], []).append(key)
    for column, keys in roles.items():
        if len(keys) > 1:
            raise ConfigError(f"{path}: [data] {' and '.join(keys)} name the same column {column!r}; a column "
                              "plays one role.")


def _check_names(values, path):
    """task, metric and include against what the library knows, before any data is read; a metric of one
    task only settles ``task = "auto"``."""
    from ..search import CLASSIFICATION_METRICS, REGRESSION_METRICS
    from ..space import DEFAULT_COMPONENTS, REGRESSION_COMPONENTS

    metrics = {"classification": sorted(CLASSIFICATION_METRICS), "regression": sorted(REGRESSION_METRICS)}
    task = values.setdefault("task", "auto")
    if task not in ("auto", *metrics):
        raise ConfigError(f"{path}: [search] task must be \"auto\", \"classification\" or \"regression\", "
                          f"got {task!r}.")
    if "metric" in values:
        of = [name for name, known in metrics.items() if values["metric"] in known and task in ("auto", name)]
        if not of:
            raise ConfigError(f"{path}: [search] metric {values['metric']!r} is unknown for task {task!r}; the "
                              f"metrics are {metrics if task == 'auto' else metrics[task]}.")
        values["task"] = task = of[0]
    families = {"classification": DEFAULT_COMPONENTS, "regression": REGRESSION_COMPONENTS}
    known = {c.key for name, components in families.items() if task in ("auto", name) for c in components}
    unknown = [k for k in values.get("include", ()) if k not in known]
    if unknown:
        raise ConfigError(f"{path}: [search] include names unknown model families {unknown}; they are "
                          f"{sorted(known)}.")


def _check_range(values, key, low, high, path, section, closed=False):
    if key not in values:
        return
    value = values[key]
    if not math.isfinite(value):
        raise ConfigError(f"{path}: [{section}] {key} must be a finite number, got {value!r}.")
    below = value < low if closed else value <= low
    above = high is not None and value >= high
    if below or above:
        bounds = f">= {low}" if closed else f"> {low}"
        bounds += f" and < {high}" if high is not None else ""
        raise ConfigError(f"{path}: [{section}] {key} must be {bounds}, got {value!r}.")
