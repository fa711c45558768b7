"""The regression families of the registry: the classifiers' knobs, regressors' estimators.

Each :class:`~automl.space.components.ComponentSpec` here reuses the suggest function of its classification
twin where the knobs mean the same; only the estimator (and a few knobs, such as the loss of
histogram gradient boosting or SVR's epsilon) change. Every family sees a standardized target
(:func:`automl.space.pipeline.suggest_pipeline` wraps it in scikit-learn's TransformedTargetRegressor),
so ranges such as SVR's epsilon or ridge's alpha hold whatever the target's unit.
"""

from sklearn.ensemble import ExtraTreesRegressor, RandomForestRegressor
from sklearn.linear_model import ElasticNet, Ridge
from sklearn.neighbors import KNeighborsRegressor
from sklearn.neural_network import MLPRegressor
from sklearn.svm import SVR

from .components import (
    GBM_DEFAULT_L2, ComponentSpec, _defaults, _float, _int, _lgbm_class, _suggest_catboost, _suggest_hgb,
    _suggest_knn, _suggest_lgbm, _suggest_mlp, _suggest_xgb,
)
from .stopping import StoppingHGBRegressor


def _suggest_ridge(trial, profile, prefix):
    return {"alpha": _float(trial, prefix, "alpha", 1e-4, 1e3)}


def _suggest_enet(trial, profile, prefix):
    return {"alpha": _float(trial, prefix, "alpha", 1e-5, 1.0),
            "l1_ratio": _float(trial, prefix, "l1_ratio", 0.01, 1.0)}


def _suggest_forest(trial, profile, prefix):
    # Squared error only: scikit-learn's absolute-error trees cost O(n^2) per split search.
    return {
        "n_estimators": _int(trial, prefix, "n_estimators", 50, 500),
        "max_features": _float(trial, prefix, "max_features", 0.05, 1.0),
        "min_samples_leaf": _int(trial, prefix, "min_samples_leaf", 1, 32),
    }


def _suggest_hgb_loss(trial, profile, prefix):
    return {**_suggest_hgb(trial, profile, prefix),
            "loss": trial.suggest_categorical(f"{prefix}.loss", ["squared_error", "absolute_error"])}


def _build_hgb(params, random_state):
    # As for the classifier: early stopping on an inner 10% split bounds the trees on larger data.
    return StoppingHGBRegressor(
        max_iter=1000 if params["early_stopping"] else 200, n_iter_no_change=20,
        random_state=random_state, **params,
    )


def _suggest_svr(trial, profile, prefix):
    # epsilon is in units of the standardized target; gamma relative to the input width, as for SVC.
    return {
        "C": _float(trial, prefix, "C", 1e-2, 1e3),
        "epsilon": _float(trial, prefix, "epsilon", 1e-3, 1.0),
        "gamma": _float(trial, prefix, "gamma_scale", 1e-3, 1e2) / max(1, profile.n_features),
    }


# Named functions, not lambdas: the specs are pickled with the fitted model (components_).
def _build_rf(params, random_state):
    return RandomForestRegressor(random_state=random_state, n_jobs=1, **params)


def _build_et(params, random_state):
    return ExtraTreesRegressor(random_state=random_state, n_jobs=1, **params)


def _build_ridge(params, random_state):
    return Ridge(**params)


def _build_enet(params, random_state):
    return ElasticNet(max_iter=5000, random_state=random_state, **params)


def _build_knn(params, random_state):
    return KNeighborsRegressor(**params)


def _build_mlp(params, random_state):
    return MLPRegressor(max_iter=300, random_state=random_state, **params)


def _build_svr(params, random_state):
    return SVR(**params)


def _build_lgbm(params, random_state):
    cls, params = _lgbm_class(params, classifier=False)
    return cls(subsample_freq=1, random_state=random_state, n_jobs=1, verbose=-1, **params)


def _build_xgb(params, random_state):
    from xgboost import XGBRegressor

    return XGBRegressor(tree_method="hist", random_state=random_state, n_jobs=1, **params)


def _build_catboost(params, random_state):
    from catboost import CatBoostRegressor

    # As for the classifier: categories arrive encoded, and no catboost_info folder is written.
    return CatBoostRegressor(thread_count=1, random_seed=random_state, verbose=0, allow_writing_files=False,
                             **params)


_BOOSTING_DEFAULTS = dict(n_estimators=200, subsample=0.8, colsample_bytree=0.8)

# The portfolio's order (``portfolio_rank``) is each family's mean rank among the families' first
# trials, by 5-fold RMSE on the 4 regression tuning datasets (benchmarks/defaults_ab.py; SVR is
# offered on the two of up to 5,000 rows only). XGBoost came second, yet it was eighth in the
# registry, behind the forests, whose fits cost 2 to 17 times a boosting family's on
# california-housing; the forests and kNN come after the boosting families now. The same runs kept
# L2 = 1 for HGB and LightGBM (GBM_DEFAULT_L2): RMSE fell on 3 of the 4 datasets for each
# (energy-efficiency-heating 0.421 to 0.398 for HGB) and rose by under 1% on kin8nm. Recorded in
# docs/benchmarks.md ("Regression portfolio").
REGRESSION_COMPONENTS = (
    ComponentSpec(
        "hgb", "HistGradientBoosting", _suggest_hgb_loss, _build_hgb,
        native_categorical="categorical_features", handles_missing=True,
        default_params=[
            _defaults("hgb", learning_rate=0.1, max_leaf_nodes=31, min_samples_leaf=20,
                      l2_regularization=GBM_DEFAULT_L2, max_features=1.0, loss="squared_error"),
            _defaults("hgb", learning_rate=0.05, max_leaf_nodes=15, min_samples_leaf=40,
                      l2_regularization=1.0, max_features=0.5, loss="squared_error"),
        ],
        portfolio_rank=3.0,
    ),
    ComponentSpec(
        "lgbm", "LightGBM", _suggest_lgbm, _build_lgbm, handles_missing=True, requires="lightgbm",
        native_categorical="pandas",
        default_params=[_defaults("lgbm", learning_rate=0.05, reg_lambda=GBM_DEFAULT_L2, num_leaves=31,
                                  min_child_samples=20, **_BOOSTING_DEFAULTS)],
        portfolio_rank=3.75,
    ),
    ComponentSpec(
        "catboost", "CatBoost", _suggest_catboost, _build_catboost, handles_missing=True, requires="catboost",
        # The classifier's first trial (CatBoost's defaults at 300 of its 1000 iterations): RMSE loss.
        default_params=[_defaults("catboost", iterations=300, depth=6, l2_leaf_reg=3.0, learning_rate_auto=True)],
        portfolio_rank=4.0,
    ),
    # The forests' first trials take the regression defaults of their authors: leaves of 5 rows at
    # least (R's randomForest, nodesize = 5, Liaw and Wiener 2002) and a third of the columns per split
    # for a random forest (mtry = p / 3), all of them for extra trees (K = p, Geurts et al. 2006). With
    # leaves of one row a regression tree grows a leaf per distinct target value: on 15,480 rows of
    # california-housing, 300 such trees took 15 s a fold on one core and hundreds of MB.
    ComponentSpec(
        "rf", "RandomForest", _suggest_forest,
        _build_rf,
        default_params=[_defaults("rf", n_estimators=300, max_features=1 / 3, min_samples_leaf=5)],
        portfolio_rank=4.75,
    ),
    ComponentSpec(
        "et", "ExtraTrees", _suggest_forest,
        _build_et,
        default_params=[_defaults("et", n_estimators=300, max_features=1.0, min_samples_leaf=5)],
        portfolio_rank=5.0,
    ),
    ComponentSpec(
        "ridge", "Ridge", _suggest_ridge, _build_ridge, needs_scaling=True,
        default_params=[_defaults("ridge", alpha=1.0)],
        portfolio_rank=8.5,
    ),
    ComponentSpec(
        "enet", "ElasticNet", _suggest_enet,
        _build_enet,
        needs_scaling=True,
    ),
    ComponentSpec(
        "xgb", "XGBoost", _suggest_xgb, _build_xgb, handles_missing=True, requires="xgboost",
        default_params=[_defaults("xgb", learning_rate=0.1, reg_lambda=1.0, max_depth=6, min_child_weight=1.0,
                                  **_BOOSTING_DEFAULTS)],
        portfolio_rank=3.25,
    ),
    ComponentSpec(
        "knn", "KNeighbors", _suggest_knn, _build_knn,
        needs_scaling=True, max_rows=50_000,
        default_params=[_defaults("knn", n_neighbors=15, weights="distance", p=2)], takes_sample_weight=False,
        portfolio_rank=6.25,
    ),
    ComponentSpec(
        "mlp", "MLP", _suggest_mlp,
        _build_mlp,
        needs_scaling=True, max_rows=100_000,
    ),
    ComponentSpec(
        "svr", "SVR (RBF)", _suggest_svr, _build_svr, needs_scaling=True,
        max_rows=5_000, default_params=[_defaults("svr", C=1.0, epsilon=0.1, gamma_scale=1.0)],
        portfolio_rank=4.0,
    ),
)
