"""The validated data held once by the fit and its worker processes: read from a memory-mapped file.

A search's worker process that receives the frame by pickle holds its own copy; joblib's executor
memory-maps large arrays in /dev/shm for it, but the fit still holds the original. Here the fit
itself reads its frame from a file (``joblib.dump``, then ``joblib.load`` with ``mmap_mode="r"``),
and joblib's executor, seeing arrays backed by a file, sends the workers the file's name instead of
the data: every process maps the same pages (issue 25: 800,000 rows x 30 columns).
"""

import os

import joblib
import numpy as np

# joblib's executor memory-maps arrays from 1 MB (its max_nbytes default); smaller frames go to the
# workers by pickle, as copies, and are kept in memory here too.
SHARE_MIN_BYTES = 1_000_000


def memory_mapped(folder, frame, *arrays):
    """``frame`` and ``arrays`` read, read-only, from a file memory-mapped in ``folder``.

    Parameters
    ----------
    folder : str or path-like
        Where the file goes (``data.joblib``); the caller removes it, after the last use of the data.
    frame : DataFrame of shape (n_samples, n_features)
        A validated frame (:func:`automl.data.check_training_data`).
    *arrays : ndarray, or lists or tuples of them
        Travel with the frame (the encoded target, the folds' index arrays): joblib's executor would
        otherwise copy each of 1 MB or more to /dev/shm for the workers, and leave the files behind
        when it stops a busy worker.

    Returns
    -------
    values : tuple
        ``(frame, *arrays)``, the same values, dtypes and index. Their numeric arrays are views of a
        read-only ``numpy.memmap`` (an in-place change raises ``ValueError``); categorical columns
        (objects) are in memory. The values as given when the frame's numeric columns hold fewer than
        :data:`SHARE_MIN_BYTES` bytes.
    """
    values = (frame, *arrays)
    if frame.select_dtypes("number").memory_usage(index=False).sum() < SHARE_MIN_BYTES:
        return values
    path = os.path.join(folder, "data.joblib")
    joblib.dump(values, path)
    return _as_ndarrays(joblib.load(path, mmap_mode="r"))


def _as_ndarrays(value):
    """Plain ndarray views of the memmaps in ``value`` (``y[rows]`` would be a memmap too, of nothing).

    joblib's executor still sends a view by the file's name: it follows ``.base`` to the memmap.
    """
    if isinstance(value, np.memmap):
        return np.asarray(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_as_ndarrays(item) for item in value)
    return value
