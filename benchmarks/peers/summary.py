"""Markdown summary of a compare.csv: per budget, scores, ranks, wins/ties/losses, costs, our overhead.

Classification and regression datasets get separate sections (ranks and normalized scores are not
pooled across the two): first every budget's classification section, then every budget's regression
section. A CSV with classification rows only gives the same report as before regression existed.

Rules (also in benchmarks/README.md):

* The primary metric is ROC AUC on binary datasets (higher is better), log loss on multiclass ones
  and RMSE on regression ones (lower is better). "good" below is the score with log loss and RMSE
  negated, so higher is always better.
* A failed run (crash or time limit) counts as the constant predictor of its split (ROC AUC 0.5, log
  loss of the training class prior, RMSE of the training mean), as the AutoML Benchmark imputes
  failures. Systems are then compared on their mean over seeds.
* Mean rank: per dataset, systems ranked on their mean over seeds (1 = best, ties averaged), then
  averaged over the datasets that every system in the table ran (had a row for, failed or not).
* Normalized score: per dataset, 0 = the constant predictor, 1 = the best system's mean over seeds.
* Wins/ties/losses: a tie when |difference of the means| < max(pooled standard deviation over seeds,
  floor), the pooled SD being sqrt((sd_a^2 + sd_b^2) / 2). The floor is 0.002 for ROC AUC and log
  loss; RMSE has the units of each dataset's target, so there it is 0.002 x the constant predictor's
  RMSE (0.002 on the normalized score's scale when the best RMSE is near 0). With one seed the SD is
  unknown and the floor alone decides. The SD is the seed-to-seed spread, split noise included:
  conservative, since every system sees the same splits.
"""

from pathlib import Path

import numpy as np
import pandas as pd

from peers.monitor import BUSY_CORES

KEY = ["system", "dataset", "seed", "budget"]
TIE_FLOOR = 0.002  # absolute for ROC AUC and log loss, relative to the constant predictor's RMSE
REGRESSION = "regression"
METRIC_NAMES = {"binary": "ROC AUC", "multiclass": "log loss", REGRESSION: "RMSE"}
OURS, OURS_SINGLE = "ours", "ours-single"


def latest(frame):
    """One row per (system, dataset, seed, budget): the last written (a retried failure replaces it)."""
    return frame.drop_duplicates(KEY, keep="last").reset_index(drop=True)


def with_goodness(frame):
    """Adds ``value`` (score, or the constant predictor's for a failed run) and ``good`` (higher = better)."""
    frame = frame.copy()
    ok = frame["status"] == "ok"
    frame["value"] = frame["score"].where(ok, frame["constant_score"])
    sign = np.where(frame["task"] == "binary", 1.0, -1.0)
    frame["good"] = frame["value"] * sign
    frame["good_constant"] = frame["constant_score"] * sign
    return frame


def dataset_stats(frame):
    """Per (dataset, system): mean and SD over seeds of value and good, run and failure counts."""
    grouped = frame.groupby(["dataset", "system"])
    return pd.DataFrame({
        "task": grouped["task"].first(), "value": grouped["value"].mean(),
        "good": grouped["good"].mean(), "sd": grouped["good"].std(ddof=1).fillna(0.0),
        "constant": grouped["good_constant"].mean(), "runs": grouped.size(),
        "failed": grouped["status"].apply(lambda s: int((s != "ok").sum())),
    })


def mean_ranks(stats):
    """Mean rank per system over the datasets every system ran, and how many datasets that was."""
    good = stats["good"].unstack("system").dropna()
    ranks = good.rank(axis=1, ascending=False, method="average")
    return ranks.mean(), len(good)


def normalized_scores(stats):
    """Per (dataset, system): (good - constant) / (best good - constant)."""
    best = stats.groupby("dataset")["good"].transform("max")
    span = (best - stats["constant"]).replace(0.0, np.nan)
    return (stats["good"] - stats["constant"]) / span


def verdict(a, b):
    """'win', 'tie' or 'loss' of row a against row b of dataset_stats (the module docstring's rule)."""
    floor = TIE_FLOOR * abs(a["constant"]) if a["task"] == REGRESSION else TIE_FLOOR
    threshold = max(np.sqrt((a["sd"] ** 2 + b["sd"] ** 2) / 2), floor)
    difference = a["good"] - b["good"]
    return "tie" if abs(difference) < threshold else ("win" if difference > 0 else "loss")


def head_to_head(stats, system, other):
    """Per dataset both ran: the verdict of ``system`` against ``other`` and the difference in good."""
    rows = []
    for dataset in stats.index.get_level_values("dataset").unique():
        if (dataset, system) in stats.index and (dataset, other) in stats.index:
            a, b = stats.loc[(dataset, system)], stats.loc[(dataset, other)]
            rows.append({"dataset": dataset, "difference": a["good"] - b["good"], "verdict": verdict(a, b)})
    return pd.DataFrame(rows, columns=["dataset", "difference", "verdict"])


# --- markdown -------------------------------------------------------------------------------------

def md_table(frame, floatfmt="{:.4f}"):
    """A DataFrame as a GitHub markdown table (no tabulate dependency)."""
    def cell(value):
        if isinstance(value, (float, np.floating)):
            return "" if np.isnan(value) else floatfmt.format(value)
        return str(value)
    lines = ["| " + " | ".join(map(str, frame.columns)) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def score_table(stats, systems):
    """Datasets x systems: mean held-out primary metric over seeds, the best in bold, and the winner."""
    rows = []
    for dataset, block in stats.groupby(level="dataset"):
        block = block.droplevel("dataset")
        best = block["good"].idxmax()
        row = {"dataset": dataset, "metric": METRIC_NAMES[block["task"].iloc[0]],
               "constant": abs(block["constant"].iloc[0])}
        for system in systems:
            if system in block.index:
                entry = block.loc[system]
                text = f"{entry['value']:.4f}" + (f" ({entry['failed']} failed)" if entry["failed"] else "")
                row[system] = f"**{text}**" if system == best else text
            else:
                row[system] = ""
        row["winner"] = best
        rows.append(row)
    return pd.DataFrame(rows)


def extra_metrics_table(frame, systems):
    """Regression datasets x systems: mean R2 and MAE over the successful runs, as "R2 / MAE"."""
    ok = frame[frame["status"] == "ok"]
    means = ok.groupby(["dataset", "system"])[["r2", "mae"]].mean()
    rows = []
    for dataset in sorted(frame["dataset"].unique()):
        row = {"dataset": dataset}
        for system in systems:
            row[system] = (f"{means.loc[(dataset, system), 'r2']:.4f} / {means.loc[(dataset, system), 'mae']:.4g}"
                           if (dataset, system) in means.index else "")
        rows.append(row)
    return pd.DataFrame(rows)


def system_table(frame, stats, quality="accuracy"):
    """Per system: mean rank, normalized score, datasets won, mean ``quality`` (accuracy, or R2 for
    regression), failures, time and memory."""
    ranks, n_ranked = mean_ranks(stats)
    normalized = normalized_scores(stats).groupby(level="system").mean()
    winners = stats["good"].groupby(level="dataset").idxmax().map(lambda key: key[1]).value_counts()
    grouped = frame.groupby("system")
    table = pd.DataFrame({
        "mean rank": ranks, "normalized score": normalized, "datasets won": winners,
        f"mean {quality}": grouped[quality].mean(),
        "failures": grouped["status"].apply(lambda s: f"{int((s != 'ok').sum())}/{len(s)}"),
        "median fit s": grouped["fit_seconds"].median(), "worst wall/budget": grouped["wall_ratio"].max(),
        "peak RSS max MB": grouped["peak_rss_mb"].max(),
    })
    table["datasets won"] = table["datasets won"].fillna(0).astype(int)
    table = table.sort_values("mean rank").reset_index(names="system")
    return table, n_ranked


def wtl_table(stats, systems):
    """Wins/ties/losses of ``ours`` against every other system."""
    rows = []
    for other in systems:
        if other == OURS:
            continue
        verdicts = head_to_head(stats, OURS, other)["verdict"].value_counts()
        rows.append({"ours vs": other, "wins": int(verdicts.get("win", 0)), "ties": int(verdicts.get("tie", 0)),
                     "losses": int(verdicts.get("loss", 0))})
    return pd.DataFrame(rows)


def ensemble_table(stats):
    """Ours (ensemble) against ours-single (best single trial) per dataset."""
    duel = head_to_head(stats, OURS, OURS_SINGLE)
    value = stats["value"]
    duel.insert(1, OURS, [value[(d, OURS)] for d in duel["dataset"]])
    duel.insert(2, OURS_SINGLE, [value[(d, OURS_SINGLE)] for d in duel["dataset"]])
    return duel.rename(columns={"difference": "gain"})


OURS_COLUMNS = {"trials_complete": "complete", "trials_pruned": "pruned", "trials_failed": "failed",
                "trials_stopped": "stopped at the deadline",
                "trials_per_minute": "complete/min", "members": "members", "fit_seconds": "fit s",
                "search_seconds": "search s", "ensemble_seconds": "ensemble s",
                "model_check_seconds": "model check s", "overhead_seconds": "overhead s"}


def ours_table(frame):
    """Our systems: trial counts, trials completed per minute of search, and our overhead."""
    ours = frame[frame["system"].str.startswith(OURS) & (frame["status"] == "ok")]
    columns = [c for c in OURS_COLUMNS if c in ours]  # rows written before a column existed lack it
    table = ours.groupby("system")[columns].mean().rename(columns=OURS_COLUMNS)
    if "folds_fitted" in ours:  # compute per trial: what pruning saves
        started = ours[[c for c in ("trials_complete", "trials_pruned", "trials_failed", "trials_stopped")
                        if c in ours]].sum(axis=1)
        table["folds/trial"] = (ours["folds_fitted"] / started).groupby(ours["system"]).mean()
    table["overhead share mean"] = ours.groupby("system")["overhead_share"].mean()
    table["overhead share max"] = ours.groupby("system")["overhead_share"].max()
    return table.reset_index()


def failure_lines(frame):
    failed = frame[frame["status"] != "ok"]
    return [f"- {r.system} / {r.dataset} / seed {r.seed}: {r.status}: {r.error}" for r in failed.itertuples()]


def timing_caveat(frame):
    """A warning when runs shared the machine with other work (see peers/monitor.py, foreign_cpu)."""
    if "foreign_cpu" not in frame:
        return []
    busy = frame[frame["foreign_cpu"] > BUSY_CORES]
    if busy.empty:
        return []
    return [f"{len(busy)} of {len(frame)} runs shared the machine with other processes (on average more "
            f"than {BUSY_CORES} core busy outside the run; worst {busy['foreign_cpu'].max():.2f} core, "
            f"column foreign_cpu): their wall times, trial counts, wall/budget and timeouts are not "
            f"comparable. Affected: " + ", ".join(f"{r.system}/{r.dataset}/{r.seed}" for r in busy.itertuples())]


def split_warnings(frame):
    """Dataset/seed pairs whose runs report different test rows (a peer venv split differently)."""
    hashes = frame.dropna(subset=["split_hash"]).groupby(["dataset", "seed"])["split_hash"].nunique()
    return [f"- {d} seed {s}: the systems saw different splits" for (d, s), n in hashes.items() if n > 1]


def budget_section(frame, budget, regression=False):
    """One budget's section: classification datasets, or (``regression``) regression datasets."""
    frame = with_goodness(frame)
    systems = [s for s in SYSTEM_ORDER if s in set(frame["system"])] + sorted(
        set(frame["system"]) - set(SYSTEM_ORDER))
    stats = dataset_stats(frame)
    system_summary, n_ranked = system_table(frame, stats, "r2" if regression else "accuracy")
    runs = (f"({frame['dataset'].nunique()} datasets, seeds "
            f"{', '.join(map(str, sorted(frame['seed'].unique())))}, {len(frame)} runs)")
    if regression:
        parts = [f"## Regression: budget {budget:g} s {runs}",
                 "### Held-out RMSE, mean over seeds (lower is better; constant: the training mean's RMSE)",
                 md_table(score_table(stats, systems)),
                 "### Held-out R2 / MAE, mean over the successful runs",
                 md_table(extra_metrics_table(frame, systems))]
        tie_rule = "max(pooled SD over seeds, 0.002 x the constant predictor's RMSE)"
    else:
        parts = [f"## Budget {budget:g} s {runs}",
                 "### Held-out score, mean over seeds (ROC AUC: higher is better; log loss: lower)",
                 md_table(score_table(stats, systems))]
        tie_rule = "max(pooled SD over seeds, 0.002)"
    parts += [f"### Systems (mean rank over the {n_ranked} datasets all of them ran)",
              md_table(system_summary, "{:.3f}")]
    if OURS in systems:
        parts += [f"### ours: wins / ties / losses (tie: |mean difference| < {tie_rule})",
                  md_table(wtl_table(stats, systems))]
    if OURS in systems and OURS_SINGLE in systems:
        parts += ["### Ensemble vs best single trial (ours vs ours-single; gain > 0: the ensemble is better)",
                  md_table(ensemble_table(stats))]
    if frame["system"].str.startswith(OURS).any():
        parts += ["### Our trials and overhead (means over successful runs; overhead = fit wall - search - "
                  "final ensemble fit)", md_table(ours_table(frame), "{:.2f}")]
    parts += ["### Failures", "\n".join(failure_lines(frame)) or "none"]
    caveat = timing_caveat(frame)
    if caveat:
        parts += ["### Timing caveat"] + caveat
    warnings = split_warnings(frame)
    if warnings:
        parts += ["### Split check FAILED", "\n".join(warnings)]
    return "\n\n".join(parts)


SYSTEM_ORDER = ["ours", "ours-random", "ours-nopruning", "ours-pruning", "ours-rung2", "ours-single", "hgb",
                "lgbm", "flaml", "autogluon", "autogluon-best"]


def _shown(csv_path):
    """The CSV's path from the repository's root when it lies inside it: the report is committed, and a
    checkout's absolute path says nothing to its readers."""
    path, root = Path(csv_path).resolve(), Path(__file__).resolve().parents[2]
    return path.relative_to(root) if path.is_relative_to(root) else csv_path


def summarize(csv_path, datasets=None, seeds=None):
    """The whole markdown report of a results CSV: one section per budget for the classification
    datasets, then one per budget for the regression datasets. ``datasets`` and ``seeds`` (lists or
    None for all) keep only those rows."""
    frame = latest(pd.read_csv(csv_path))
    chosen = ""
    if datasets is not None:
        frame = frame[frame["dataset"].isin(datasets)]
        chosen += f" Datasets: {' '.join(datasets)}."
    if seeds is not None:
        frame = frame[frame["seed"].isin(seeds)]
        chosen += f" Seeds: {' '.join(map(str, seeds))}."
    header = ["# automl vs peers: scores on the held-out rows of each split (25%; 20% of tables of 100k+ rows)",
              f"From `{_shown(csv_path)}` ({len(frame)} runs).{chosen} "
              "Protocol and rules: benchmarks/README.md. A failed run counts as the constant predictor."]
    regression = frame["task"] == REGRESSION
    sections = [budget_section(block, budget) for budget, block in frame[~regression].groupby("budget")]
    sections += [budget_section(block, budget, regression=True)
                 for budget, block in frame[regression].groupby("budget")]
    return "\n\n".join(header + sections) + "\n"
