"""Docstring sections shared by AutoClassifier and AutoRegressor (numpydoc), kept in one place."""

PARAMETERS_DOC = """
    Parameters
    ----------
    time_budget : float or None, default=60
        Wall-clock seconds for the whole ``fit`` (validation, search, ensemble, final fit). Shares
        are kept back for the final fit (15%) and the model-level leak check (5%); what the final
        fit is then estimated not to need goes back to the search (a top-up); workers still busy
        past the search's deadline are stopped. None: ``n_trials`` bounds the search.
    n_trials : int or None, default=None
        Total trials (complete, pruned and failed). None: as many as ``time_budget`` allows.
    metric : str or None, default=None
        Classifier: ``"roc_auc"``, ``"log_loss"``, ``"accuracy"``, ``"balanced_accuracy"`` or ``"f1"``;
        None: ROC AUC for two classes, log loss for more. Regressor: ``"rmse"`` (None), ``"mae"``,
        ``"r2"``. The study's direction follows the metric.
    cv : int, "time" or CV splitter, default=5
        Folds shared by every trial: an int gives scikit-learn's StratifiedKFold (classifier) or
        KFold (regressor), shuffled with ``random_state`` (``StratifiedGroupKFold`` or ``GroupKFold``
        when ``fit`` is given ``groups``). ``"time"``: ``TimeSeriesSplit(5)`` on the rows in time order
        (``time_column``, else the order given): each fold trains on the past and validates the next
        sixth of the rows; the oldest sixth is never validated, so its rows have no OOF predictions and
        ensemble selection runs on the others. A splitter is called as ``split(X, y, groups)``, on the
        rows in time order when ``time_column`` is given.
    validation : {"auto", "cv", "holdout"}, default="auto"
        How trials are scored. "cv": the ``cv`` folds, Hyperband's resource being folds. "holdout":
        one seeded, stratified holdout of 10% of the rows (at most 100,000), the trials trained on
        1/27, 1/9, 1/3 and all of the rest, which are Hyperband's rungs; the ensemble is made of the
        trials' own fitted models (no refit; ``final_fit`` is ignored), and a trial the time budget
        stops after a rung is a candidate with its model of that rung; an ensemble worse than a
        constant prediction on the holdout is replaced by the fallback model. With a CV splitter as
        ``cv`` it raises ``ValueError``. "auto", with an int ``cv``: a holdout from 100,000 rows or
        10 million cells (FLAML's switch), or from 20,000 rows when the cells (rows x columns) reach
        1.5 million and 2,500 per second of ``time_budget`` (FLAML's rate; 9 million at an hour), where
        CV would leave too few trials; else CV (with ``cv="time"`` too: the holdout is then the newest
        rows). A splitter of one split is a holdout too.
    time_column : str or None, default=None
        A numeric or datetime column of ``X`` that orders the rows in time, for ``cv="time"`` or a
        splitter such as ``TimeSeriesSplit``; an int ``cv`` with it raises ``ValueError``. Rows of one
        timestamp are never split between a fold's training and validation rows. The column stays a
        feature (drop it from ``X`` and give the order as the rows' order if it should not be one).
    n_jobs : int, default=1
        Worker processes sharing the study; -1 means all cores, -2 all but one, as in joblib and
        scikit-learn (the number used is ``n_jobs_``); 0 raises ``ValueError``. Threads per model
        are the cores shared out between them. A holdout search runs one process whose models use
        the threads of all ``n_jobs`` (few long trials: a model sooner, one copy of the data). With ``n_jobs=1`` and
        ``time_budget=None`` the trials run in this process and the fit is reproducible under
        ``random_state``.
    random_state : int or None, default=None
        Seed of the folds, the sampler, the models and ensemble selection.
    include : list of str or None, default=None
        Model family keys to search; None searches every installed family the data size allows.
        Classifier: ``"hgb", "lgbm", "catboost", "rf", "et", "logreg", "xgb", "knn", "mlp", "svc"``. Regressor:
        ``"hgb", "lgbm", "catboost", "rf", "et", "ridge", "enet", "xgb", "knn", "mlp", "svr"``.
    components : sequence of ComponentSpec, default=()
        Families of your own, added to the registry (see :class:`automl.space.components.ComponentSpec`).
    sampler : {"tpe", "random"}, default="tpe"
        Random search is the baseline TPE must beat.
    pruning : bool or "auto", default="auto"
        Hyperband over folds (over rows for a holdout); False runs every trial to the last fold.
        "auto" prunes a holdout search, and a CV search when there is no ``time_budget`` or it is at
        least 120 s: at 60 s, pruned trials leave no out-of-fold predictions for the ensemble, and no
        pruning scored as well or better (docs/benchmarks.md).
    ensemble_size : int, default=50
        Picks of Caruana ensemble selection (with replacement); 1 keeps the best single trial.
    final_fit : {"refit", "bag"}, default="refit"
        ``"refit"`` fits each member on all rows; ``"bag"`` averages its per-fold models.
    storage : str, optuna.storages.BaseStorage or None, default=None
        Optuna storage of the study. None: a journal file in a temporary folder, deleted after
        ``fit`` (``study_`` keeps an in-memory copy). An RDB URL or journal path persists it.
    study_name : str or None, default=None
        None uses ``"automl"``: Hyperband assigns brackets by hashing the study name, so a fixed
        name keeps runs reproducible. An existing study of that name is continued (warm start).
    oof_dir : str or None, default=None
        Folder kept for the trials' OOF predictions (a subfolder per study). With a persistent
        ``storage``, a fit continuing an interrupted one on the same data, folds and metric reuses its
        complete trials instead of redoing them. None: a temporary folder, deleted after ``fit``.
    tracking : bool, default=True
        Log to MLflow (parent run per fit, nested run per trial, final model).
    tracking_uri : str or None, default=None
        MLflow tracking URI; None uses ``MLFLOW_TRACKING_URI`` or a local store (``mlflow.db`` in the
        working directory; open it with ``mlflow ui --backend-store-uri sqlite:///mlflow.db``).
    experiment_name : str, default="automl"
    verbose : int, default=1
        0 silent; 1 a progress line on stderr at the start, every 10 s of the search (redrawn every 2 s
        on a terminal) and when the final stage starts.
    leak_check : {"warn", "raise", "off"}, default="warn"
        Before the search, look for target leakage, identifier columns and duplicated rows
        (:func:`automl.checks.leakage.check_data_leakage`). ``"warn"`` issues a ``LeakageWarning`` per
        finding; ``"raise"`` raises a ``DataValidationError`` on a high-severity one. After the
        final fit, the best pipeline's permutation importance is checked for a dominant column
        (:mod:`automl.checks.dominance`), in the time left; that check only warns.
"""
ATTRIBUTES_DOC = """
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Set when X is a DataFrame with string column names.
    profile_ : DatasetProfile
        Column kinds, missing rates, categories, class counts or target statistics, data fingerprint.
    leaderboard_ : DataFrame of shape (n_trials, 10)
        ``trial, family, state, mean, std, folds, seconds, weight, params, note``; best first.
    ensemble_ : WeightedEnsembleClassifier or WeightedEnsembleRegressor
        The fitted ensemble (the classifier's on encoded labels).
    ensemble_candidates_ : ndarray of int of shape (n_candidates,)
        Trial numbers whose OOF predictions made up the hillclimb set of ensemble selection: the
        complete trials of this search, from every worker that joined it, and for a holdout search
        also those the budget stopped after a rung.
    best_params_ : dict
        Parameters of the best complete trial (of a holdout search with none complete, the best one
        stopped by the budget).
    best_score_ : float
        Its mean CV score (a holdout search: its holdout score at the rows it reached): optimistic,
        being the best of many (see ``best_score_std_``).
    best_score_std_ : float
        Standard deviation of its fold scores; NaN for a holdout search (one score).
    ensemble_score_, best_single_oof_score_ : float
        Scores on all OOF predictions pooled (the hillclimb set) of the ensemble and of the best
        single trial there; as optimistic as ``best_score_`` (a mean of fold scores). The first is not
        below the second unless members were dropped to end in time (a warning says so). NaN for
        the fallback.
    metric_ : str
        The search metric's name.
    n_groups_ : int or None
        Groups ``fit`` was given (after rows validation dropped), None without ``groups``.
    time_ordered_ : bool
        Whether the folds (or the holdout) were in time order (``cv="time"`` or ``time_column``).
    weighted_ : bool
        Whether ``fit`` was given ``sample_weight``: then every score above (``best_score_``, the
        leaderboard, ``ensemble_score_``) is the metric weighted by it.
    validation_ : {"cv", "holdout"}
        How the trials were scored (``validation``, "auto" resolved). With "holdout", ``mean`` in the
        leaderboard is the holdout score at the rows the trial reached, ``folds`` is 1 and ``std`` NaN,
        and the OOF predictions (``ensemble_score_``) are the holdout's rows only.
    random_state_ : int
        The seed the fit used (drawn at random when ``random_state`` is None), so that any trial can be
        rebuilt: ``rebuild(params, profile_, components_, random_state_)``.
    n_jobs_ : int
        The worker processes ``n_jobs`` asked for, a negative value resolved against the cores
        (joblib's rule, with :func:`joblib.cpu_count`, which honours a container's CPU quota).
    components_ : list of ComponentSpec
        The model families the search offered.
    n_trials_killed_ : int
        Trials still running when their worker was stopped at the deadline (recorded as failed).
    study_ : optuna.Study
        Earlier fits' trials too, when continued; ``leaderboard_`` has only those of ``search_key_``.
    search_key_ : str
        Digest of the data, folds and metric, stored on each trial: trials sharing it are comparable.
    mlflow_run_id_ : str or None
        The parent MLflow run, None when ``tracking=False``.
    leak_report_ : LeakageReport
        Findings of the data and model checks (column, kind, severity, figures, message) and notes
        on what was checked; empty when ``leak_check="off"``. In MLflow as ``leak_report.csv``.
    mlflow_tracking_uri_ : str or None
        Where it was logged.
    timings_ : dict of str -> float
        Wall seconds of each stage: ``search, top_up, ensemble, model_check, tracking, total``.
        ``top_up`` is the part of ``search`` after the first search deadline (0.0 without a top-up).
"""
