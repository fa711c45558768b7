"""The CASH search space tree, written as code (define-by-run).

The root choice is the model family; the preprocessing branch depends on it (a scaler only for
scale-sensitive families, no imputer for families that split on missing values, native categorical
codes for families that read them; on a table of many numeric columns, keeping all or the top ``k``
of them, :mod:`automl.space.selection`), then the family's own hyperparameters. Every knob is named
``"<step>.<component>.<param>"`` and is suggested only on its branch, so TPE models it only from the
trials that had it. :func:`rebuild` replays a parameter dict through the same code with Optuna's
``FixedTrial``, so the best pipeline is built by exactly the function that sampled it.
"""

import math
import warnings

import numpy as np
import optuna
from sklearn.base import clone
from sklearn.compose import ColumnTransformer, TransformedTargetRegressor
from sklearn.frozen import FrozenEstimator
from sklearn.impute import SimpleImputer
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import (
    FunctionTransformer, OneHotEncoder, OrdinalEncoder, QuantileTransformer, RobustScaler, StandardScaler,
    TargetEncoder,
)
from sklearn.utils.validation import has_fit_parameter

from .selection import PORTFOLIO_KEPT, suggest_selection

SCALERS = {
    "none": lambda n_samples, random_state: "passthrough",
    "standard": lambda n_samples, random_state: StandardScaler(),
    "robust": lambda n_samples, random_state: RobustScaler(),
    # Above 10,000 rows the quantiles are estimated on a random subsample: seed it.
    "quantile": lambda n_samples, random_state: QuantileTransformer(
        n_quantiles=min(1000, max(10, n_samples // 2)), output_distribution="normal",
        random_state=random_state,
    ),
}
# Histogram boosting bins categories into at most 255 bins; wider columns stay ordinal numbers.
MAX_NATIVE_CARDINALITY = 250
# TargetEncoder cross-fits on shuffled folds; scikit-learn 1.9 moved their seed from random_state to cv.
_TARGET_ENCODER_SEEDED_BY_CV = TargetEncoder().random_state == "deprecated"


def suggest_pipeline(trial, profile, specs, random_state=None):
    """Sample one pipeline from the tree.

    Parameters
    ----------
    trial : optuna.trial.Trial or optuna.trial.FixedTrial
        Where the knobs are asked for.
    profile : DatasetProfile
        The training data's profile: column kinds, missing rates, categories, size.
    specs : list of ComponentSpec
        The model families on offer (the root choice ``"model"``).
    random_state : int or None, default=None
        Seed given to every randomized step.

    Returns
    -------
    pipeline : sklearn.pipeline.Pipeline or sklearn.compose.TransformedTargetRegressor
        Unfitted, with steps ``"preprocess"`` (a ColumnTransformer) and ``"model"``. For a regression
        profile, that pipeline inside a TransformedTargetRegressor (:func:`_target_transform`).
    """
    by_key = {spec.key: spec for spec in specs}
    spec = by_key[trial.suggest_categorical("model", list(by_key))]
    preprocess, native_columns = _suggest_preprocessor(trial, profile, spec, random_state)
    model = spec.build(spec.suggest(trial, profile, f"model.{spec.key}"), random_state)
    steps = [("preprocess", preprocess), ("model", model)]
    if native_columns and spec.native_categorical == "pandas":
        # LightGBM takes categories from pandas dtypes only (a categorical_feature constructor
        # argument is ignored, a fit argument would not survive the Pipeline): hand it a frame.
        preprocess.set_output(transform="pandas")
        steps.insert(1, ("categories", FunctionTransformer(as_categories, kw_args={"columns": native_columns})))
    elif native_columns:
        model.set_params(**{spec.native_categorical: native_columns})
    if profile.task == "regression":
        return _target_transform(trial, profile, Pipeline(steps))
    return Pipeline(steps)


def _target_transform(trial, profile, pipeline):
    """The regression pipeline fit on a standardized target, or a standardized log1p of it.

    Standardizing makes every family's ranges (SVR's epsilon, ridge's alpha, an MLP's initial scale)
    independent of the target's unit. ``log1p`` is a searched choice only for a non-negative target
    with a skew of 1 or more (highly skewed, by Bulmer's 1979 rule of thumb); it fits relative errors,
    which RMSE on the original scale may or may not reward, so the search decides. Where there is no
    choice, nothing is suggested: a study continued on a target that lost its sign or its skew (a
    retraining job's next snapshot) would fail every trial on a parameter whose choices changed, which
    Optuna refuses.
    """
    stats = profile.target_stats or {}
    transformer = StandardScaler()
    offered = stats.get("min", -1.0) >= 0 and stats.get("skew", 0.0) >= 1.0
    if offered and trial.suggest_categorical("target", ["standard", "log"]) == "log":
        transformer = make_pipeline(FunctionTransformer(np.log1p, np.expm1, check_inverse=False), StandardScaler())
    return TransformedTargetRegressor(regressor=pipeline, transformer=transformer, check_inverse=False)


def as_categories(X, columns):
    """``X`` with the integer codes in ``columns`` (positions) as pandas categories.

    Columns are renamed ``f0, f1, ...``: LightGBM refuses names holding JSON punctuation, which
    user columns may. LightGBM keeps the training categories and maps later frames onto them.
    """
    X = X.set_axis([f"f{i}" for i in range(X.shape[1])], axis=1)
    return X.astype({f"f{i}": "category" for i in columns})


def _suggest_preprocessor(trial, profile, spec, random_state):
    """The ColumnTransformer of one branch, and the output indices of native categorical columns."""
    categorical = list(profile.categorical_columns)
    encoder_key = trial.suggest_categorical("encoder", ["onehot", "ordinal", "target"]) if categorical else None
    native = encoder_key == "ordinal" and spec.native_categorical is not None
    # Native columns come first so that their output indices are 0..n-1 whatever the numeric side adds.
    categorical.sort(key=lambda c: len(profile.categories.get(c, ())) > MAX_NATIVE_CARDINALITY)
    transformers = []
    if categorical:
        steps = _categorical_imputer(trial, profile, spec, categorical)
        steps.append(_encoder(trial, encoder_key, spec, random_state, profile))
        transformers.append(("categorical", _chain(steps), categorical))
    numeric = list(profile.numeric_columns)
    if numeric:
        steps = _numeric_imputer(trial, profile, spec, numeric)
        if spec.needs_scaling:
            scaler = trial.suggest_categorical("scaler", list(SCALERS))
            steps.append(("scaler", SCALERS[scaler](profile.n_samples, random_state)))
        if (select := suggest_selection(trial, len(numeric), profile.task)) is not None:
            steps.append(select)
        transformers.append(("numeric", _chain(steps), numeric))
    native_columns = []
    if native:
        native_columns = [
            i for i, c in enumerate(categorical)
            if len(profile.categories.get(c, ())) <= MAX_NATIVE_CARDINALITY
        ]
    return ColumnTransformer(transformers, sparse_threshold=0.0), native_columns


def _chain(steps):
    return Pipeline(steps) if steps else "passthrough"


def _has_missing(profile, columns):
    return any(profile.missing_rate.get(c, 0.0) > 0 for c in columns)


def _numeric_imputer(trial, profile, spec, columns):
    # Families that split on NaN themselves learn more from the missingness than any fill value.
    if spec.handles_missing:
        return []
    if not _has_missing(profile, columns):
        # Nothing to choose a strategy from, but a value may still be missing at predict time.
        return [("imputer", SimpleImputer(strategy="median"))]
    strategy = trial.suggest_categorical("imputer.numeric", ["mean", "median", "constant"])
    indicator = trial.suggest_categorical("imputer.numeric.add_indicator", [False, True])
    return [("imputer", SimpleImputer(strategy=strategy, fill_value=0.0, add_indicator=indicator))]


def _categorical_imputer(trial, profile, spec, columns):
    if spec.handles_missing:
        return []
    strategy = "constant"
    if _has_missing(profile, columns):
        strategy = trial.suggest_categorical("imputer.categorical", ["most_frequent", "constant"])
    return [("imputer", SimpleImputer(strategy=strategy, fill_value="missing"))]


def _encoder(trial, key, spec, random_state, profile):
    if key == "onehot":
        min_frequency = trial.suggest_float("encoder.onehot.min_frequency", 1e-3, 0.1, log=True)
        return ("encoder", OneHotEncoder(handle_unknown="infrequent_if_exist", min_frequency=min_frequency,
                                         sparse_output=False, dtype=profile.float_dtype))
    if key == "target":  # float64 whatever the table: TargetEncoder has no dtype
        if _TARGET_ENCODER_SEEDED_BY_CV:
            splitter = KFold if profile.task == "regression" else StratifiedKFold
            folds = splitter(n_splits=5, shuffle=True, random_state=random_state)
            return ("encoder", TargetEncoder(cv=folds))
        return ("encoder", TargetEncoder(random_state=random_state))
    # Unknown levels become NaN for families that handle it (read as missing), else the code -1.
    unknown = np.nan if spec.handles_missing else -1
    return ("encoder", OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=unknown,
                                      dtype=profile.float_dtype))


def rebuild(params, profile, specs, random_state=None):
    """Build the pipeline a finished trial sampled, from its ``params`` dict.

    Parameters
    ----------
    params : dict
        A trial's ``params`` (names ``"<step>.<component>.<param>"``).
    profile, specs, random_state
        As for :func:`suggest_pipeline`; they must be those of the search.

    Returns
    -------
    pipeline : sklearn.pipeline.Pipeline
        Unfitted.

    Raises
    ------
    ValueError
        If ``params`` lacks a knob the branch needs (Optuna's FixedTrial names it).
    """
    return suggest_pipeline(optuna.trial.FixedTrial(params), profile, specs, random_state)


# Knobs that count training rows (or, for XGBoost, a hessian sum, which grows with them): a leaf's minimum.
ROW_COUNT_PARAMS = ("min_samples_leaf", "min_child_samples", "min_child_weight")
# Knobs that set a model's threads: scikit-learn, LightGBM and XGBoost say n_jobs, CatBoost thread_count.
THREAD_PARAMS = ("n_jobs", "thread_count")


def _model_params(pipeline, names):
    """The model step's parameters among ``names``, by their full name (``model__...`` or ``regressor__model__...``)."""
    return {key: value for key, value in pipeline.get_params(deep=True).items()
            if key.rpartition("__")[2] in names and key.rpartition("__")[0].endswith("model")}


def at_rows(pipeline, fraction):
    """``pipeline`` for a fit on ``fraction`` of the rows: its row-counting knobs scaled by ``fraction``.

    A leaf's minimum size is a share of the rows in disguise: 20 rows of 720,000 allow leaves 27 times
    finer than 20 rows of a 1/27 subsample. Scaled, a configuration keeps the shape it will have on
    all rows, so a rung on fewer rows judges the same model, smaller (the trap a row resource sets for
    successive halving: unscaled, small rungs would favour large leaves).

    Parameters
    ----------
    pipeline : Pipeline or TransformedTargetRegressor
        From :func:`suggest_pipeline`; not modified.
    fraction : float
        In (0, 1]; 1 returns ``pipeline`` itself.

    Returns
    -------
    pipeline : Pipeline or TransformedTargetRegressor
        A clone with :data:`ROW_COUNT_PARAMS` of the model step scaled (integers rounded, at least 1).
    """
    if fraction >= 1.0:
        return pipeline
    scaled = {key: max(1, round(value * fraction)) if isinstance(value, (int, np.integer)) else value * fraction
              for key, value in _model_params(pipeline, ROW_COUNT_PARAMS).items()
              if isinstance(value, (int, float, np.number)) and not isinstance(value, bool)}
    return clone(pipeline).set_params(**scaled)


def fit_quietly(pipeline, X, y, sample_weight=None, rows_shuffled=False):
    """A fitted clone of ``pipeline``, its warnings (convergence and the like) not shown.

    A sampled configuration's warnings are the search's business, reflected in its score: printed per
    fold they bury the progress line, and the refits of the leak check would print them again.
    Not for threads: ``warnings.catch_warnings`` is process-wide. ``sample_weight`` of shape
    (n_samples,) reaches the model step (:func:`weight_params`). ``rows_shuffled=True`` says that the
    rows are in a seeded random order (a holdout's rung): a model that stops early then stops on the
    last rows, read in place (:mod:`automl.space.stopping`); models that cannot use it never see it.
    """
    params = weight_params(pipeline, sample_weight)
    if rows_shuffled and has_fit_parameter(_model_step(pipeline), "rows_shuffled"):
        params.update(_for_model_step(pipeline, {"rows_shuffled": True}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return clone(pipeline).fit(X, y, **params)


def _model_step(estimator):
    """The model at the end of a Pipeline, or inside a TransformedTargetRegressor."""
    if isinstance(estimator, Pipeline):
        return _model_step(estimator.steps[-1][1])
    if isinstance(estimator, TransformedTargetRegressor):
        return _model_step(estimator.regressor)
    return estimator


def _for_model_step(estimator, params):
    """``params`` of the model step's ``fit``, named as ``estimator.fit`` takes them.

    A Pipeline passes them to its last step (``model__sample_weight``: scikit-learn's ``step__param``
    fit parameters), a TransformedTargetRegressor to its regressor.
    """
    if isinstance(estimator, Pipeline):
        name, last = estimator.steps[-1]
        return {f"{name}__{key}": value for key, value in _for_model_step(last, params).items()}
    if isinstance(estimator, TransformedTargetRegressor):
        return _for_model_step(estimator.regressor, params)
    return params


def weight_params(estimator, sample_weight):
    """The keyword arguments of ``estimator.fit`` that give its model ``sample_weight``.

    The model step gets them (:func:`_for_model_step`). The preprocessing steps are fitted
    unweighted: scikit-learn's imputers, scalers and encoders take no weights (a target encoder's
    category means and a column selection's F-statistics are unweighted too). A frozen model
    (``FrozenEstimator``, a holdout search's member) was fitted with them.

    Parameters
    ----------
    estimator : estimator
    sample_weight : ndarray of shape (n_samples,) or None

    Returns
    -------
    params : dict
        Empty when ``sample_weight`` is None.

    Raises
    ------
    TypeError
        If the model's ``fit`` takes no ``sample_weight`` (scikit-learn's ``has_fit_parameter``): it
        would ignore the weights.
    """
    model = _model_step(estimator)
    if sample_weight is None or isinstance(model, FrozenEstimator):
        return {}
    if not has_fit_parameter(model, "sample_weight"):
        raise TypeError(f"{type(model).__name__}.fit takes no sample_weight: it would ignore the weights. "
                        "Leave its family out of a weighted fit (include=...).")
    return _for_model_step(estimator, {"sample_weight": sample_weight})


def set_threads(pipeline, threads):
    """Set the model step's thread count (:data:`THREAD_PARAMS`) to ``threads``, in place; return ``pipeline``.

    Only the model's, and only where its builder pinned a number (forests, LightGBM, XGBoost, CatBoost):
    a ColumnTransformer's ``n_jobs`` would start processes for each transformer, and scikit-learn 1.8
    warns that LogisticRegression's has no effect.
    """
    found = {k: v for k, v in _model_params(pipeline, THREAD_PARAMS).items() if isinstance(v, int)}
    return pipeline.set_params(**{key: threads for key in found}) if found else pipeline


# Preprocessing of the portfolio's starting configurations: the choices a practitioner makes first.
_PORTFOLIO_PREPROCESSING = {
    "imputer.numeric": "median",
    "imputer.numeric.add_indicator": True,
    "imputer.categorical": "constant",
    "scaler": "standard",
    "encoder.onehot.min_frequency": 0.01,
    "target": "standard",
    # Used on wide tables only (space/selection.py): the first trials must finish there too.
    "select": "top",
    "select.top.k": PORTFOLIO_KEPT,
}


def portfolio(specs):
    """Strong starting configurations of the families on offer, best-known first.

    Parameters
    ----------
    specs : list of ComponentSpec

    Returns
    -------
    configs : list of dict
        Parameter dicts to enqueue (``study.enqueue_trial``); knobs a branch does not use are ignored.
        Families come by ``portfolio_rank``, then in the order of ``specs``.
    """
    per_family = []
    ranked = sorted(specs, key=lambda spec: math.inf if spec.portfolio_rank is None else spec.portfolio_rank)
    for spec in ranked:
        encoder = "ordinal" if spec.native_categorical or spec.handles_missing else "onehot"
        per_family.append([{**_PORTFOLIO_PREPROCESSING, "encoder": encoder, **p} for p in spec.default_params])
    # Round-robin over families, so a short budget tries every family's first default before seconds.
    rounds = max((len(f) for f in per_family), default=0)
    return [f[i] for i in range(rounds) for f in per_family if i < len(f)]


def default_pipeline(key, profile, random_state=None):
    """The first portfolio configuration of the registry family ``key``, built for ``profile``.

    Serves as the fit's fallback model and as the nested-CV baseline of that family.

    Parameters
    ----------
    key : str
        A key of the profile's task registry with default parameters (e.g. "logreg", "ridge").
    profile : DatasetProfile
    random_state : int or None, default=None

    Returns
    -------
    pipeline : sklearn.pipeline.Pipeline
        Unfitted.
    """
    from .registry import resolve_components

    specs = resolve_components(include=[key], profile=profile)  # the profile picks the task's registry
    return rebuild(portfolio(specs)[0], profile, specs, random_state)
