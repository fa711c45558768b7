"""Scheduled retraining: a job file, a snapshot of the data, and a challenger fit against the registry's champion.

:mod:`~automl.retraining.config` reads and checks the job's TOML file,
:mod:`~automl.retraining.snapshot` loads the data and holds out its newest rows, and
:mod:`~automl.retraining.job` runs the job: one at a time, crash-safe, with exit codes for cron.
"""

from .config import JobConfig, read_config
from .job import EXIT_CODES, JobBusyError, JobSummary, job_lock, run_job
from .snapshot import Split, load_snapshot, snapshot_fingerprint, split_holdout

__all__ = [
    "EXIT_CODES", "JobBusyError", "JobConfig", "JobSummary", "job_lock", "load_snapshot", "read_config", "run_job",
    "Split", "snapshot_fingerprint", "split_holdout",
]
