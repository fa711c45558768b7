"""The module names of automl's flat layout, kept importable so that models saved under them still load.

A pickle names each class and function by its module: a model saved before the subpackages refers to
``automl.estimator.AutoClassifier``, ``automl.search_space.as_categories``,
``automl.regressors._suggest_hgb_loss``. Any loader (``automl.load``, ``mlflow.sklearn.load_model``,
``joblib.load``) imports those names, so :func:`install` puts a finder on ``sys.meta_path`` that answers
each old name with a small module forwarding every attribute to the module that holds it now (the moved
objects kept their names), in the manner of NumPy 2's ``numpy.core`` forwarding to ``numpy._core``.
Nothing is imported until an old name is asked for.
"""

import importlib
import importlib.abc
import importlib.util
import sys
import types

# Old module -> the module that holds what it held. Only modules whose objects a fitted model holds.
FLAT_MODULES = {
    "automl.components": "automl.space.components",
    "automl.regressors": "automl.space.regressors",
    "automl.search_space": "automl.space.pipeline",
    "automl.validation": "automl.data.validation",
    "automl.target": "automl.data.target",
    "automl.leakage": "automl.checks.leakage",
    "automl.estimator": "automl.estimators.classifier",
    "automl.regressor": "automl.estimators.regressor",
}


class _Forwarding(types.ModuleType):
    """An old module name whose attributes are those of the module it moved to (:data:`FLAT_MODULES`)."""

    def __getattr__(self, name):
        return getattr(importlib.import_module(FLAT_MODULES[self.__name__]), name)


class _FlatNames(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        return importlib.util.spec_from_loader(name, self) if name in FLAT_MODULES else None

    def create_module(self, spec):
        return _Forwarding(spec.name)

    def exec_module(self, module):
        pass


def install():
    """Add the finder to ``sys.meta_path`` once (``import automl`` calls it)."""
    if not any(isinstance(finder, _FlatNames) for finder in sys.meta_path):
        sys.meta_path.append(_FlatNames())
