"""The registry of model families: what each needs, how its knobs are suggested, how it is built.

A :class:`ComponentSpec` is plain data plus two functions. ``suggest(trial, profile, prefix)`` asks an
Optuna trial for the family's hyperparameters (define-by-run, every name under ``prefix``) and returns
them as keyword arguments; ``build(params, random_state)`` turns them into an unfitted scikit-learn
classifier. Optional families (LightGBM, XGBoost, CatBoost) import their package inside ``build`` only.

Ranges follow the published spaces of auto-sklearn (Feurer et al., 2015) and FLAML (Wang et al., 2021),
narrowed where a value is known to be hopeless; every multiplicative knob is on a log scale.
"""

import importlib.util
import warnings
from dataclasses import dataclass, field
from typing import Callable

from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.svm import SVC

from .stopping import StoppingHGBClassifier


@dataclass(frozen=True)
class ComponentSpec:
    """One model family of the search space.

    Parameters
    ----------
    key : str
        Unique short name, used in parameter names (``"model.<key>.<param>"``) and in ``include=``.
    name : str
        Human name, shown in the leaderboard and the report.
    suggest : callable
        ``suggest(trial, profile, prefix) -> dict`` of keyword arguments for ``build``.
    build : callable
        ``build(params, random_state) -> estimator`` returning an unfitted classifier.
    needs_scaling : bool, default=False
        Whether the family is sensitive to feature scale (a scaler is then searched).
    native_categorical : str or None, default=None
        For families that split on categories themselves (their "ordinal" encoder feeds them): the
        name of the constructor parameter that takes the indices of categorical columns, or
        ``"pandas"`` for families that read pandas ``category`` columns (LightGBM).
    handles_missing : bool, default=False
        Whether NaN may reach the model (imputation becomes optional).
    max_rows : int or None, default=None
        Families whose fit cost grows too fast are not offered above this many rows.
    requires : str or None, default=None
        Importable module the family needs; the family is skipped when it is not installed.
    default_params : list of dict, default=[]
        Strong starting configurations (full parameter names) enqueued before TPE takes over.
    takes_sample_weight : bool, default=True
        Whether the model's ``fit`` takes ``sample_weight``; a weighted fit leaves out a family that
        does not (:func:`automl.space.resolve_components`).
    portfolio_rank : float or None, default=None
        Where the family's defaults come in each round of the portfolio (:func:`automl.space.portfolio`):
        lower first, None after every ranked family; equal ranks keep the registry's order. Kept apart
        from the registry's order because that order is the searched ``model`` choice's, which a
        continued study must see unchanged.
    """

    key: str
    name: str
    suggest: Callable
    build: Callable
    needs_scaling: bool = False
    native_categorical: str | None = None
    handles_missing: bool = False
    max_rows: int | None = None
    requires: str | None = None
    default_params: list = field(default_factory=list)
    takes_sample_weight: bool = True
    portfolio_rank: float | None = None

    def is_available(self):
        """True when the family's optional package can be imported."""
        return self.requires is None or importlib.util.find_spec(self.requires) is not None

    def fits(self, profile):
        """True when the family can serve data of this profile (row limit)."""
        return self.max_rows is None or profile.n_samples <= self.max_rows


def _float(trial, prefix, name, low, high, log=True):
    return trial.suggest_float(f"{prefix}.{name}", low, high, log=log)


def _int(trial, prefix, name, low, high, log=True):
    return trial.suggest_int(f"{prefix}.{name}", low, max(low, high), log=log)


# ---- logistic regression -----------------------------------------------------------------------
def _suggest_logreg(trial, profile, prefix):
    return {"C": _float(trial, prefix, "C", 1e-4, 1e4)}


def _build_logreg(params, random_state):
    return LogisticRegression(max_iter=2000, random_state=random_state, **params)


# ---- k-nearest neighbours ----------------------------------------------------------------------
def _suggest_knn(trial, profile, prefix):
    # A neighbourhood larger than a tenth of the rows only blurs the classes.
    high = min(100, max(2, profile.n_samples // 10))
    return {
        "n_neighbors": _int(trial, prefix, "n_neighbors", 1, high),
        "weights": trial.suggest_categorical(f"{prefix}.weights", ["uniform", "distance"]),
        "p": trial.suggest_categorical(f"{prefix}.p", [1, 2]),
    }


def _build_knn(params, random_state):
    return KNeighborsClassifier(**params)


# ---- random forest and extra trees -------------------------------------------------------------
def _suggest_forest(trial, profile, prefix):
    return {
        "n_estimators": _int(trial, prefix, "n_estimators", 50, 500),
        "max_features": _float(trial, prefix, "max_features", 0.05, 1.0),
        "min_samples_leaf": _int(trial, prefix, "min_samples_leaf", 1, 32),
        "criterion": trial.suggest_categorical(f"{prefix}.criterion", ["gini", "entropy"]),
    }


def _build_rf(params, random_state):
    return RandomForestClassifier(random_state=random_state, n_jobs=1, **params)


def _build_et(params, random_state):
    return ExtraTreesClassifier(random_state=random_state, n_jobs=1, **params)


# ---- histogram gradient boosting ---------------------------------------------------------------
def _early_stopping(profile):
    """Whether an inner 10% validation split can hold every class twice over.

    HistGradientBoosting and MLP stratify that split and fail when a class cannot appear in it;
    below that size they train a fixed number of iterations instead.
    """
    if profile.task == "regression":  # the split is not stratified: only its size matters
        return profile.n_samples >= 500
    # A class needs 2 members in the split's training rows, and a fold's training rows may lack one.
    return (profile.n_samples * 0.1 * 0.8 >= 2 * profile.n_classes and profile.n_samples >= 500
            and min(profile.class_counts) >= 3)


def _suggest_hgb(trial, profile, prefix):
    return {
        "early_stopping": _early_stopping(profile),
        "learning_rate": _float(trial, prefix, "learning_rate", 0.01, 0.5),
        "max_leaf_nodes": _int(trial, prefix, "max_leaf_nodes", 4, 256),
        "min_samples_leaf": _int(trial, prefix, "min_samples_leaf", 2, 200),
        "l2_regularization": _float(trial, prefix, "l2_regularization", 1e-8, 10.0),
        "max_features": _float(trial, prefix, "max_features", 0.2, 1.0, log=False),
    }


def _build_hgb(params, random_state):
    # Early stopping on an inner 10% split bounds the number of trees; it is not a searched budget.
    # Without it (small data) 200 trees at the sampled learning rate. On a holdout's rungs the stopping
    # rows are the rung's last rows (space/stopping.py).
    return StoppingHGBClassifier(
        max_iter=1000 if params["early_stopping"] else 200, n_iter_no_change=20,
        random_state=random_state, **params,
    )


# ---- multi-layer perceptron --------------------------------------------------------------------
def _suggest_mlp(trial, profile, prefix):
    n_layers = trial.suggest_int(f"{prefix}.n_layers", 1, 2)
    width = _int(trial, prefix, "width", 16, 256)
    return {
        "early_stopping": _early_stopping(profile),
        "hidden_layer_sizes": (width,) * n_layers,
        "alpha": _float(trial, prefix, "alpha", 1e-7, 1e-1),
        "learning_rate_init": _float(trial, prefix, "learning_rate_init", 1e-4, 1e-1),
    }


def _build_mlp(params, random_state):
    return MLPClassifier(max_iter=300, random_state=random_state, **params)


# ---- support vector machine --------------------------------------------------------------------
def _suggest_svc(trial, profile, prefix):
    # gamma relative to the input width, as scikit-learn's gamma="scale" is on standardized data:
    # gamma_scale=1 is that heuristic, so one range serves 5 columns and 500.
    return {
        "C": _float(trial, prefix, "C", 1e-2, 1e4),
        "gamma": _float(trial, prefix, "gamma_scale", 1e-3, 1e2) / max(1, profile.n_features),
    }


class CoupledSVC(SVC):
    """``SVC(probability=True)``: libsvm's Platt scaling on 5 inner folds, classes coupled pairwise.

    The pairwise coupling (Wu, Lin and Weng, JMLR 2004) is why this is kept: scikit-learn 1.9
    deprecates ``probability`` for ``CalibratedClassifierCV(SVC(), ensemble=False)``, whose
    one-vs-rest sigmoids gave a 5-fold CV log loss of 0.485 on vehicle (4 classes) against 0.399
    here; on binary data (kc1) both give the same ROC AUC. The pin ``scikit-learn<1.10`` keeps
    ``probability``, removed in 1.11; the deprecation warning is silenced inside ``fit`` only.
    """

    def __init__(self, *, C=1.0, gamma="scale", random_state=None):
        super().__init__(C=C, gamma=gamma, probability=True, random_state=random_state)

    def fit(self, X, y, sample_weight=None):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*probability.*deprecated", category=FutureWarning)
            return super().fit(X, y, sample_weight=sample_weight)


def _build_svc(params, random_state):
    return CoupledSVC(random_state=random_state, **params)


# ---- LightGBM and XGBoost (optional) -----------------------------------------------------------
# From this many rows LightGBM stops early on an inner split (automl.space.boosting) instead of fitting a
# searched number of trees: the threshold of scikit-learn's HistGradientBoosting (early_stopping="auto").
BOOSTING_EARLY_STOPPING_MIN_ROWS = 10_000
# The most trees an early-stopped LightGBM grows (657 sufficed at a learning rate of 0.1 on 720,000 rows).
MAX_BOOSTING_ROUNDS = 2000


def _suggest_boosting(trial, profile, prefix, early_stopping=False):
    params = {} if early_stopping else {"n_estimators": _int(trial, prefix, "n_estimators", 16, 1024)}
    params.update({
        "learning_rate": _float(trial, prefix, "learning_rate", 0.01, 0.5),
        "subsample": _float(trial, prefix, "subsample", 0.5, 1.0, log=False),
        "colsample_bytree": _float(trial, prefix, "colsample_bytree", 0.3, 1.0, log=False),
        "reg_lambda": _float(trial, prefix, "reg_lambda", 1e-8, 10.0),
    })
    return params


def _suggest_lgbm(trial, profile, prefix):
    early = profile.n_samples >= BOOSTING_EARLY_STOPPING_MIN_ROWS and _early_stopping(profile)
    params = _suggest_boosting(trial, profile, prefix, early_stopping=early)
    params["num_leaves"] = _int(trial, prefix, "num_leaves", 4, 256)
    params["min_child_samples"] = _int(trial, prefix, "min_child_samples", 2, 100)
    if early:
        params["early_stopping"] = True
    return params


def _lgbm_class(params, classifier=True):
    """The LightGBM class for ``params`` and the keyword arguments to build it with.

    ``params["early_stopping"]`` (set by the suggest function on large data) picks the early-stopped
    class of :mod:`automl.space.boosting`, with at most :data:`MAX_BOOSTING_ROUNDS` trees.
    """
    params = dict(params)
    if params.pop("early_stopping", False):
        from .boosting import EarlyStoppingLGBMClassifier, EarlyStoppingLGBMRegressor

        params["n_estimators"] = MAX_BOOSTING_ROUNDS
        return (EarlyStoppingLGBMClassifier if classifier else EarlyStoppingLGBMRegressor), params
    from lightgbm import LGBMClassifier, LGBMRegressor

    return (LGBMClassifier if classifier else LGBMRegressor), params


def _build_lgbm(params, random_state):
    cls, params = _lgbm_class(params)
    # subsample only acts with a bagging frequency; verbose=-1 keeps worker logs readable.
    return cls(subsample_freq=1, random_state=random_state, n_jobs=1, verbose=-1, **params)


def _suggest_xgb(trial, profile, prefix):
    params = _suggest_boosting(trial, profile, prefix)
    params["max_depth"] = _int(trial, prefix, "max_depth", 2, 12, log=False)
    params["min_child_weight"] = _float(trial, prefix, "min_child_weight", 0.01, 100.0)
    return params


def _build_xgb(params, random_state):
    from xgboost import XGBClassifier

    return XGBClassifier(tree_method="hist", random_state=random_state, n_jobs=1, **params)


def _suggest_catboost(trial, profile, prefix):
    # CatBoost's own learning rate (None) is set from the row count and the iterations: for a binary
    # target 0.023 at 500 rows and 300 iterations, 0.13 at 30,000 (CatBoost 1.2.10; higher for several
    # classes, 0.21 and 0.26). On the tuning split's small binary datasets it did better than a fixed
    # rate (5-fold ROC AUC of blood-transfusion: 0.709 at 300 iterations, against 0.687 and 0.674 at
    # 500 iterations of 0.03 and 0.05), so it is a branch of its own beside a searched rate.
    params = {
        "iterations": _int(trial, prefix, "iterations", 64, 1024),
        "depth": _int(trial, prefix, "depth", 3, 8, log=False),
        "l2_leaf_reg": _float(trial, prefix, "l2_leaf_reg", 0.5, 30.0),
        "learning_rate": None,
    }
    if not trial.suggest_categorical(f"{prefix}.learning_rate_auto", [True, False]):
        params["learning_rate"] = _float(trial, prefix, "learning_rate", 0.005, 0.3)
    return params


def _build_catboost(params, random_state):
    from catboost import CatBoostClassifier

    # Categories arrive encoded by our encoders. CatBoost's own target statistics on raw categories
    # scored lower on the tuning split (5-fold ROC AUC at 300 iterations: credit-g 0.761 against 0.789
    # ordinal-encoded, bank-marketing 0.947 against 0.948) at up to 9x the time (74 s against 8.5 s).
    # allow_writing_files=False: by default every fit writes a catboost_info folder in the cwd.
    return CatBoostClassifier(thread_count=1, random_seed=random_state, verbose=0, allow_writing_files=False,
                              **params)


def _defaults(key, **params):
    return {"model": key, **{f"model.{key}.{name}": value for name, value in params.items()}}


# The portfolio's gradient boosting keeps an L2 penalty of 1 on leaf values (XGBoost's default): a
# leaf's Newton step is its gradient sum over its hessian sum plus L2, and a rare class, predicted near
# p = 0, has hessians p(1 - p) near 0, so without the penalty its steps blow up (on 40,000 rows of
# kddcup99, 23 classes, a 5-fold log loss of 1.07 for HGB at L2 = 1e-8 against 0.0028 at 1; on the
# tuning split HGB's ROC AUC rose on all 8 binary tables, and log loss fell on vehicle and splice).
GBM_DEFAULT_L2 = 1.0

DEFAULT_COMPONENTS = (
    ComponentSpec(
        "hgb", "HistGradientBoosting", _suggest_hgb, _build_hgb,
        native_categorical="categorical_features", handles_missing=True,
        default_params=[
            _defaults("hgb", learning_rate=0.1, max_leaf_nodes=31, min_samples_leaf=20,
                      l2_regularization=GBM_DEFAULT_L2, max_features=1.0),
            _defaults("hgb", learning_rate=0.05, max_leaf_nodes=15, min_samples_leaf=40,
                      l2_regularization=1.0, max_features=0.5),
        ],
    ),
    ComponentSpec(
        "lgbm", "LightGBM", _suggest_lgbm, _build_lgbm, handles_missing=True, requires="lightgbm",
        native_categorical="pandas",
        default_params=[_defaults("lgbm", n_estimators=200, learning_rate=0.05, subsample=0.8,
                                  colsample_bytree=0.8, reg_lambda=GBM_DEFAULT_L2, num_leaves=31,
                                  min_child_samples=20)],
    ),
    ComponentSpec(
        "catboost", "CatBoost", _suggest_catboost, _build_catboost, handles_missing=True, requires="catboost",
        # CatBoost's defaults (symmetric trees of depth 6, l2_leaf_reg 3, its own learning rate) at 300
        # of its 1000 iterations, to fit a short budget.
        default_params=[_defaults("catboost", iterations=300, depth=6, l2_leaf_reg=3.0, learning_rate_auto=True)],
    ),
    ComponentSpec(
        "rf", "RandomForest", _suggest_forest, _build_rf,
        default_params=[_defaults("rf", n_estimators=300, max_features=0.5, min_samples_leaf=1,
                                  criterion="gini")],
    ),
    ComponentSpec(
        "et", "ExtraTrees", _suggest_forest, _build_et,
        default_params=[_defaults("et", n_estimators=300, max_features=0.5, min_samples_leaf=1,
                                  criterion="gini")],
    ),
    ComponentSpec(
        "logreg", "LogisticRegression", _suggest_logreg, _build_logreg, needs_scaling=True,
        default_params=[_defaults("logreg", C=1.0)],
    ),
    ComponentSpec(
        "xgb", "XGBoost", _suggest_xgb, _build_xgb, handles_missing=True, requires="xgboost",
        default_params=[_defaults("xgb", n_estimators=200, learning_rate=0.1, subsample=0.8,
                                  colsample_bytree=0.8, reg_lambda=1.0, max_depth=6,
                                  min_child_weight=1.0)],
    ),
    ComponentSpec(
        "knn", "KNeighbors", _suggest_knn, _build_knn, needs_scaling=True, max_rows=50_000,
        default_params=[_defaults("knn", n_neighbors=15, weights="distance", p=2)], takes_sample_weight=False,
    ),
    ComponentSpec("mlp", "MLP", _suggest_mlp, _build_mlp, needs_scaling=True, max_rows=100_000),
    ComponentSpec(
        "svc", "SVC (RBF)", _suggest_svc, _build_svc, needs_scaling=True, max_rows=5_000,
        default_params=[_defaults("svc", C=10.0, gamma_scale=1.0)],
    ),
)


