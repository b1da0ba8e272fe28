"""Built-in task estimators: every learner of the task packages and the baselines they are compared with.

Each is registered by name through the hook ``multikernel_estimators`` (see :mod:`multikernel.core.tasks` for
the calling convention of each task kind), so that an experiment configuration compares them in one file::

    [task]
    kind = "multilabel_ranking"
    [[estimators]]
    name = "mlr_gl"
    grid = { C = [0.1, 1, 10] }

The baselines are scikit-learn estimators where one exists (``SVC``, ``LabelSpreading``,
``SelfTrainingClassifier``, ``KMeans``, ``SpectralClustering``), wrapped only to follow the task's convention
(:class:`LabeledPart`: an inductive classifier trained on the labelled samples of a semi-supervised problem).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.base import ClassifierMixin, clone
from sklearn.preprocessing import FunctionTransformer
from sklearn.svm import SVC, SVR, OneClassSVM
from sklearn.utils.validation import validate_data

from multikernel.bilinear import BilinearClassifier, BilinearSVMClassifier, CrossModalEmbedding, HMKLClassifier
from multikernel.core.hookspecs import hookimpl
from multikernel.core.tasks import DeferredFactory, TaskEstimator
from multikernel.core.validation import check_class_labels, shown
from multikernel.estimators.base import MultikernelEstimator
from multikernel.estimators.classifier import MKLClassifier
from multikernel.estimators.classifier_cv import MKLClassifierCV
from multikernel.estimators.one_class import MKLOneClass
from multikernel.estimators.regressor import MKLRegressor
from multikernel.iokl import IOKLClustering, IOKLMultipleInstanceClassifier, IOKLSemiSupervisedClassifier
from multikernel.iokl.baselines import MISVM, SILSVM, MIKernelSVM, miSVM
from multikernel.iokl.mica import MICA
from multikernel.iokl.missvm import MissSVM
from multikernel.iokl.set_kernels import NSK, STK
from multikernel.iokl.sparse_mil import sbMIL, sMIL, stMIL
from multikernel.metric import ITML_Supervised, ITMLPlus_Supervised, ITMLS_Supervised
from multikernel.plugins.kernels import RBFKernel

# Imported when first used, not when the registry loads (they cost more than the rest of the registry together):
# scikit-learn's clustering (and manifold), semi-supervised and kernel ridge packages, and the ranking package
# with its calibration and tree imports (tests/test_registry_imports.py).
KMeans = DeferredFactory("sklearn.cluster", "KMeans")
SpectralClustering = DeferredFactory("sklearn.cluster", "SpectralClustering")
LabelSpreading = DeferredFactory("sklearn.semi_supervised", "LabelSpreading")
KernelRidge = DeferredFactory("sklearn.kernel_ridge", "KernelRidge")
MLkNN = DeferredFactory("multikernel.ranking", "MLkNN")
MultiLabelRanker = DeferredFactory("multikernel.ranking", "MultiLabelRanker")
OneVsRestRanker = DeferredFactory("multikernel.ranking", "OneVsRestRanker")

__all__ = ["LabeledPart", "ESTIMATORS"]

_BUCAK = "Bucak, Learning from multiple kernels and ambiguous labels (PhD thesis, Michigan State University, 2013)"
_XU_IOKL = "Xu, Tsang and Xu, Input-output kernel learning, ICDM 2012; Xu's thesis, chapter 4"
_BUNESCU = "Bunescu and Mooney, Multiple instance learning for sparse positive bags, ICML 2007"
_GAERTNER = "Gaertner, Flach, Kowalczyk and Smola, Multi-instance kernels, ICML 2002"
_ANDREWS = ("Andrews, Tsochantaridis and Hofmann, Support vector machines for multiple-instance learning, "
            "NIPS 2002")


class LabeledPart(ClassifierMixin, MultikernelEstimator):
    """An inductive classifier trained on the labelled samples of a semi-supervised problem only.

    ``fit(X, y)`` keeps the rows with ``y != -1`` (scikit-learn's unlabelled marker) and fits a clone of
    ``estimator`` on them; ``predict`` is the clone's.  The baseline "SVM on the labelled part" of the
    semi-supervised experiments.

    Parameters
    ----------
    estimator : classifier, default=None
        Any scikit-learn classifier; ``None`` for ``SVC()``.  The model can be saved with :meth:`save` when
        ``estimator`` is one of the library's (``MKLClassifier``, ...); one wrapping a scikit-learn estimator is
        saved with ``joblib.dump``.

    Attributes
    ----------
    estimator_ : classifier
        The fitted clone.
    classes_ : ndarray
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        When ``X`` is a DataFrame with string column names.
    """

    def __init__(self, estimator: Any = None) -> None:
        self.estimator = estimator

    def fit(self, X: Any, y: Any) -> LabeledPart:
        """Fit ``estimator`` on the rows of ``X`` whose label is not -1.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Class labels, -1 for the unlabelled samples.

        Returns
        -------
        self
        """
        with self._fit_context():
            self._require_y(y)
            X, y = validate_data(self, X, y, dtype=None, ensure_all_finite=False)
            y = check_class_labels(y)
            rows = np.flatnonzero(y != -1)
            if rows.size == 0:
                raise ValueError("every sample is unlabelled (y == -1): the labelled part is empty")
            if len(np.unique(y[rows])) < 2:
                raise ValueError(f"the labelled samples hold one class ({shown(y[rows][0])!r}); a classifier "
                                 f"needs labelled samples of at least two classes")
            self.estimator_ = clone(self.estimator if self.estimator is not None else SVC()).fit(X[rows], y[rows])
            self.classes_ = self.estimator_.classes_
        return self

    def predict(self, X: Any) -> np.ndarray:
        """The fitted estimator's predictions."""
        self._check_fitted()
        return self.estimator_.predict(validate_data(self, X, dtype=None, reset=False, ensure_all_finite=False))

    def decision_function(self, X: Any) -> np.ndarray:
        """The fitted estimator's decision values."""
        self._check_fitted()
        return self.estimator_.decision_function(
            validate_data(self, X, dtype=None, reset=False, ensure_all_finite=False))


def _signed(factory: Callable[..., Any], like: Callable[..., Any]) -> Callable[..., Any]:
    """``factory`` with the signature of ``like`` (so that configurations see the parameters it passes on)."""
    factory.__signature__ = inspect.signature(like)  # type: ignore[attr-defined]
    return factory


def ssl_svm(C: float = 100.0, kernel: str = "rbf", gamma: Any = "scale") -> LabeledPart:
    """SVC on the labelled part (the thesis's C = 100)."""
    return LabeledPart(SVC(C=C, kernel=kernel, gamma=gamma))


def ssl_l2mkl(C: float = 100.0, method: str = "l2mkl", kernels: Any = "rbf_poly") -> LabeledPart:
    """l2-MKL (or another MKL method) on the labelled part."""
    return LabeledPart(MKLClassifier(method=method, C=C, kernels=kernels))


def self_training_svc(C: float = 100.0, gamma: Any = "scale", threshold: float = 0.75, max_iter: int | None = 10
                      ) -> Any:
    """scikit-learn's SelfTrainingClassifier around a Platt-scaled SVC."""
    from sklearn.semi_supervised import SelfTrainingClassifier

    return SelfTrainingClassifier(SVC(C=C, gamma=gamma, probability=True, random_state=0), threshold=threshold,
                                  max_iter=max_iter)


def _ki_svm(**params: Any) -> IOKLMultipleInstanceClassifier:
    # KI-SVM (Li et al. 2009) is IOKL-HM at the bag level on one input kernel (spec section 3.12).
    return IOKLMultipleInstanceClassifier(**{"kernels": [RBFKernel()], **params})


ki_svm = _signed(_ki_svm, IOKLMultipleInstanceClassifier)


def _entry(name: str, task: str, factory: Callable[..., Any], summary: str, citation: str = "",
           also: tuple[str, ...] = (), **params: Any) -> TaskEstimator:
    return TaskEstimator(name=name, task=task, factory=factory, params=params, summary=summary, citation=citation,
                         also=also)


ESTIMATORS: tuple[TaskEstimator, ...] = (
    # multi-label ranking
    _entry("mlr_l1", "multilabel_ranking", MultiLabelRanker, "MLR-L1: max-margin label ranking, l1 pairwise loss "
           "(block coordinate ascent).", _BUCAK + ", ch. 4", method="mlr_l1"),
    _entry("mlr_gl", "multilabel_ranking", MultiLabelRanker, "MLR-GL: label ranking with incomplete labels "
           "(group lasso over each sample's errors).", _BUCAK + ", ch. 5", method="mlr_gl"),
    _entry("mk_mlr", "multilabel_ranking", MultiLabelRanker, "MK-MLR: MLR-L1 with learnt kernel weights (simplex, "
           "level method, certified gap); default kernels the rbf_poly family.", _BUCAK + ", ch. 6",
           method="mlr_l1", kernels="rbf_poly", regularizer="simplex"),
    _entry("avg_mlr", "multilabel_ranking", MultiLabelRanker, "AVG-MLR: MLR-L1 on the average of several kernels "
           "(default the rbf_poly family).", _BUCAK + ", ch. 6", method="mlr_l1", kernels="rbf_poly",
           regularizer="uniform"),
    _entry("ovr_svm", "multilabel_ranking", OneVsRestRanker, "One-vs-rest SVC ranked by decision values (several "
           "kernels: their average, AVG-SVM).", _BUCAK + ", section 7"),
    _entry("ovr_platt", "multilabel_ranking", OneVsRestRanker, "One-vs-rest SVC ranked by Platt-scaled "
           "probabilities (PLATT).", _BUCAK + ", section 7", platt=True),
    _entry("mlknn", "multilabel_ranking", MLkNN, "ML-kNN: multi-label k nearest neighbours.",
           "Zhang and Zhou, ML-KNN: A lazy learning approach to multi-label learning, Pattern Recognition 2007"),
    _entry("ml_mkl_sum", "multilabel_ranking", MKLClassifier, "ML-MKL-Sum: one SVM per label, one kernel weight "
           "vector shared by all labels, their objectives summed (MKLClassifier, multiclass='shared'; level "
           "method); labels ranked by decision values.", _BUCAK + ", ch. 3 (eq. 3.1-3.2)", method="l1mkl",
           multiclass="shared"),
    _entry("ml_mkl_sa", "multilabel_ranking", MKLClassifier, "ML-MKL-SA: the ML-MKL-Sum problem by stochastic "
           "approximation (a sample of labels per step; certified gap).",
           _BUCAK + ", ch. 3; Bucak, Jin and Jain, Multi-label multiple kernel learning by stochastic approximation, "
           "NIPS 2010", method="ml_mkl_sa", multiclass="shared"),
    # semi-supervised learning
    _entry("iokl_ssl", "ssl", IOKLSemiSupervisedClassifier, "IOKL semi-supervised (IOKL-HM; theta for IOKL-SM): "
           "transductive SVM through input-output kernels.", _XU_IOKL),
    _entry("ssl_svm", "ssl", ssl_svm, "SVC trained on the labelled part only."),
    _entry("ssl_l2mkl", "ssl", ssl_l2mkl, "l2-MKL (MKLClassifier) trained on the labelled part only."),
    _entry("label_spreading", "ssl", LabelSpreading, "scikit-learn's LabelSpreading (default: k-NN graph).",
           "Zhou et al., Learning with local and global consistency, NIPS 2003", kernel="knn", n_neighbors=10),
    _entry("self_training_svc", "ssl", self_training_svc, "scikit-learn's SelfTrainingClassifier(SVC).",
           "Yarowsky 1995; scikit-learn"),
    # multiple-instance learning
    _entry("iokl_mil", "mil", IOKLMultipleInstanceClassifier, "IOKL multiple-instance (bag level = input "
           "ambiguity; level='instance' = MIL-CPB); theta for IOKL-SM.", _XU_IOKL),
    _entry("ki_svm", "mil", ki_svm, "KI-SVM: IOKL-HM at the bag level on one Gaussian kernel.",
           "Li, Kwok, Tsang and Zhou, A convex method for locating regions of interest with multi-instance "
           "learning, ECML 2009"),
    _entry("sil_svm", "mil", SILSVM, "SIL-SVM: every instance labelled as its bag.", _ANDREWS),
    _entry("mi_svm", "mil", miSVM, "mi-SVM (instance level, Andrews et al.).", _ANDREWS),
    _entry("mi_svm_bag", "mil", MISVM, "MI-SVM (bag level, one witness per positive bag, Andrews et al.).",
           _ANDREWS),
    _entry("mi_kernel", "mil", MIKernelSVM, "MI-kernel: SVC on the set kernel of the bags.",
           "Gaertner, Flach, Kowalczyk and Smola, Multi-instance kernels, ICML 2002"),
    _entry("smil", "mil", sMIL, "sMIL: sparse MIL, each positive bag's mean with the margin (2 - |B|)/|B|.",
           _BUNESCU),
    _entry("stmil", "mil", stMIL, "stMIL: sMIL with the positive bags' instances as transductive unlabelled "
           "points (concave-convex procedure).", _BUNESCU),
    _entry("sbmil", "mil", sbMIL, "sbMIL: sMIL, then the top eta fraction of positive-bag instances positive and "
           "one SVM on every instance.", _BUNESCU),
    _entry("nsk", "mil", NSK, "NSK: SVC on the normalized set kernel of the bags.", _GAERTNER),
    _entry("stk", "mil", STK, "STK: SVC on a polynomial kernel of each bag's feature minima and maxima.",
           _GAERTNER),
    _entry("missvm", "mil", MissSVM, "MissSVM: the positive bags' instances as unlabelled points of a transductive "
           "SVM with a bag constraint, by the concave-convex procedure.",
           "Zhou and Xu, On the relation between multi-instance learning and semi-supervised learning, ICML 2007"),
    _entry("mica", "mil", MICA, "MICA: each positive bag as a convex combination of its instances, the 1-norm SVM "
           "(linear programme) alternated with the combinations (regularizer='l2': a C-SVC).",
           "Mangasarian and Wild, Multiple instance classification via successive linear programming, JOTA 2008"),
    # clustering
    _entry("iokl_clustering", "clustering", IOKLClustering, "Maximum-margin clustering by IOKL (two clusters, "
           "balance constraint).", _XU_IOKL),
    _entry("kmeans", "clustering", KMeans, "scikit-learn's KMeans.", "", n_clusters=2, n_init=10,
           random_state=0),
    _entry("spectral", "clustering", SpectralClustering, "scikit-learn's SpectralClustering (k-NN affinity).", "",
           n_clusters=2, affinity="nearest_neighbors", random_state=0),
    # classification of feature vectors with several kernels (the MKL methods by their method name, hMKL)
    _entry("mkl", "classification", MKLClassifier, "MKLClassifier: any MKL method preset (parameter method); also "
           "multi-label ranking (per-label weights, or multiclass='shared').", "", also=("multilabel_ranking",)),
    _entry("mkl_cv", "classification", MKLClassifierCV, "MKLClassifierCV: an MKL method preset with C chosen by "
           "cross-validation along a warm-started path (parameters Cs, cv).", ""),
    _entry("hmkl", "classification", HMKLClassifier, "Heterogeneous MKL: a trace-norm learnt kernel over the "
           "products of the base kernels.", "Kobayashi, Low-rank bilinear classification: efficient convex "
           "optimization and extensions, IJCV 2014, section 4"),
    _entry("svc", "classification", SVC, "scikit-learn's SVC (one kernel).", ""),
    # regression and outlier detection with learnt kernel weights, and scikit-learn's one-kernel baselines
    _entry("mkl_regression", "regression", MKLRegressor, "MKL regression: epsilon-SVR or kernel ridge inner problems "
           "with learnt kernel weights (every regularizer and solver, certified gap)."),
    _entry("svr", "regression", SVR, "scikit-learn's SVR (one kernel).", ""),
    _entry("kernel_ridge", "regression", KernelRidge, "scikit-learn's KernelRidge (one kernel).", ""),
    _entry("mkl_one_class", "outlier_detection", MKLOneClass, "One-class MKL: the nu one-class SVM with learnt "
           "kernel weights (certified gap)."),
    _entry("one_class_svm", "outlier_detection", OneClassSVM, "scikit-learn's OneClassSVM (one kernel).", ""),
    # two modalities in one common space
    _entry("crossmodal", "crossmodal", CrossModalEmbedding, "Cross-modal learning: a trace-norm common space of "
           "two modalities from their class labels (no pairs).", "Kobayashi, Low-rank bilinear classification: "
           "efficient convex optimization and extensions, IJCV 2014, section 5"),
    # bilinear classification of matrix samples
    _entry("bilinear", "bilinear", BilinearClassifier, "Trace-norm regularized bilinear classifier.",
           "Kobayashi, Low-rank bilinear classification: efficient convex optimization and extensions, IJCV 2014"),
    _entry("bilinear_svm", "bilinear", BilinearSVMClassifier, "Rank-constrained bilinear SVM (alternating).",
           "Pirsiavash, Ramanan and Fowlkes, Bilinear classifiers for visual recognition, NIPS 2009"),
    # metric learning
    _entry("itml", "metric", ITML_Supervised, "ITML: LogDet metric learning from labelled pairs.",
           "Davis, Kulis, Jain, Sra and Dhillon, Information-theoretic metric learning, ICML 2007"),
    _entry("itml_plus", "metric", ITMLPlus_Supervised, "ITML+: ITML with a privileged view.",
           "Xu, Li, Tsang and Xu, Metric learning with privileged information (Xu's thesis, chapter 5)"),
    _entry("itml_s", "metric", ITMLS_Supervised, "ITML-S: the two-step privileged-information baseline.",
           "Fouad, Tino, Raychaudhury and Schneider, Incorporating privileged information through metric learning, "
           "IEEE TNNLS 2013"),
    _entry("euclidean", "metric", functools.partial(FunctionTransformer), "The Euclidean metric (identity map): "
           "the baseline of the metric learners.", ""),
)


@hookimpl
def multikernel_estimators() -> dict[str, TaskEstimator]:
    return {e.name: e for e in ESTIMATORS}
