"""Multiple-instance baselines of chapter 4 (spec section 3.13): SIL-SVM, mi-SVM, MI-SVM and the MI-kernel SVM.

All take ``fit(X, y, bags)`` like :class:`~multikernel.iokl.IOKLMultipleInstanceClassifier` and solve an SVM on
a precomputed kernel (the average of the input kernels): scikit-learn's :class:`~sklearn.svm.SVC`, or for MI-SVM,
whose negative bags share a slack, :func:`bag_slack_svm` (a compiled SMO for that dual); the fitted
SVM is kept as plain arrays (``dual_coef_`` over ``support_rows_``, ``intercept_``), which is what the decision
values need and what a saved model holds.  The
semi-supervised and clustering baselines are scikit-learn estimators used as they are (``SVC`` on the
labelled part, ``LabelSpreading``, ``SelfTrainingClassifier(SVC)``, ``KMeans``, ``SpectralClustering``).
"""

from __future__ import annotations

import warnings
from typing import Any, ClassVar

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC

from multikernel._ext._group_smo import solve_group_svm
from multikernel.core.interfaces import KernelBuilder
from multikernel.core.validation import Constraint, Integer, NoneValue, Options, Real, shown
from multikernel.estimators.base import MultikernelEstimator
from multikernel.estimators.kernel_input import KernelInputMixin, KernelsParam
from multikernel.estimators.progress import FitProgress
from multikernel.iokl.estimators import _bag_lists, bag_labels, default_kernels, mil_score
from multikernel.solve.smo import default_max_iter

__all__ = ["MISVM", "MIKernelSVM", "SILSVM", "bag_slack_svm", "miSVM", "support_mean_intercept"]


# A witness gives way only to an instance of its bag that scores this much higher: the shared-slack SVM's KKT
# tolerance (bag_slack_svm's tol), below which its scores are not resolved.  Closer scores are ties, as when the
# optimal w is 0, and the alternation would otherwise follow the solver's rounding round a cycle.
_WITNESS_MARGIN = 1e-3


def _witnesses(f: np.ndarray, pos: list[np.ndarray], current: np.ndarray | None = None) -> np.ndarray:
    """Each positive bag's highest-scoring instance; with ``current``, it stays unless beaten by the margin."""
    best = np.array([b[np.argmax(f[b])] for b in pos])
    if current is None:
        return best
    return np.where(f[best] > f[current] + _WITNESS_MARGIN, best, current)


def _kept() -> None:
    """What Ctrl-C keeps in the alternations: the last SVM fitted, already the model's arrays."""


class _MILBase(KernelInputMixin, ClassifierMixin, MultikernelEstimator):
    """The shared parts of the MIL baselines: the average input kernel, the SVM kept as arrays, bag scores.

    Parameters
    ----------
    kernels : str, list of KernelBuilder or None, default=None
        The input kernels (``None``: the thesis's four, as :class:`~multikernel.iokl.IOKLMultipleInstanceClassifier`);
        their average is the SVM's kernel.
    C : float, default=10
        The SVM's cost.
    max_iter : int, default=50
        SVM fits of the alternation (mi-SVM, MI-SVM), misvm's default; a ``ConvergenceWarning`` names the
        criterion that did not hold when it is reached.
    verbose : int, default=0
        ``>= 1`` shows the alternation's SVM fits.
    kernel_params, normalize, standardize, kernel_dtype, kernel_backend, memory_budget
        The kernel input's parameters, as in :class:`~multikernel.MKLClassifier` (``normalize="none"``).
    """

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "kernels": [KernelsParam(), NoneValue()], "C": [Real(low=0)], "max_iter": [Integer(low=1)],
        "intercept": [Options("optimal", "support_mean")], "verbose": [Integer(low=0)],
    }

    intercept = "optimal"  # the SVM's bias rule: a parameter of the SVM baselines (_SVMBaseline), not of the others

    def __init__(self, kernels: Any = None, C: float = 10.0, max_iter: int = 50, verbose: int = 0,
                 kernel_params: dict[str, Any] | None = None, normalize: str = "none", standardize: bool = False,
                 kernel_dtype: str = "float64", kernel_backend: str = "dense",
                 memory_budget: int | str | None = None) -> None:
        self.kernels = kernels
        self.C = C
        self.max_iter = max_iter
        self.verbose = verbose
        self.kernel_params = kernel_params
        self.normalize = normalize
        self.standardize = standardize
        self.kernel_dtype = kernel_dtype
        self.kernel_backend = kernel_backend
        self.memory_budget = memory_budget

    def _builders(self, n_features: int) -> list[KernelBuilder]:
        return default_kernels() if self.kernels is None else super()._builders(n_features)

    def fit(self, X: Any, y: Any, bags: Any) -> _MILBase:
        """Fit on the instances of labelled bags.

        Parameters
        ----------
        X : array-like of shape (n_instances, n_features), or precomputed kernels (see ``kernels``)
        y : array-like of shape (n_instances,) or (n_bags,)
            The bag labels (two classes): one per instance (constant within a bag) or one per bag.
        bags : array-like of shape (n_instances,), or a list of index arrays
            The bag of each instance.

        Returns
        -------
        self
        """
        with self._fit_context(total=self.max_iter, desc=f"{type(self).__name__}: SVM fits") as progress:
            self._require_y(y)
            stack, _ = self._fit_stack(X)
            K = stack.combine(np.full(stack.n_kernels, 1.0 / stack.n_kernels))  # the average, without copies
            lists, yb = self._bag_targets(y, bags, len(K))
            self._alternate(K, lists, yb, progress)
        return self

    def _bag_targets(self, y: Any, bags: Any, n_instances: int) -> tuple[list[np.ndarray], np.ndarray]:
        """The bags' instance lists and their labels as +1 / -1 (``classes_[1]`` positive), setting ``classes_``;
        a library error unless there are positive and negative bags."""
        lists, yb = bag_labels(y, bags, n_instances)
        self.classes_ = np.unique(yb)
        if len(self.classes_) != 2:
            raise ValueError(f"MIL needs positive and negative bags; got bag labels "
                             f"{[shown(c) for c in self.classes_]}")
        return lists, np.where(yb == self.classes_[1], 1.0, -1.0)

    def _alternate(self, K: np.ndarray, lists: list[np.ndarray], yb: np.ndarray, progress: FitProgress) -> None:
        raise NotImplementedError

    def _cross(self, X: Any) -> np.ndarray:
        self._check_fitted()
        cross = self._cross_stack(X)
        return cross.combine(np.full(cross.n_kernels, 1.0 / cross.n_kernels))

    def _decide(self, K_rows: np.ndarray) -> np.ndarray:
        """The SVM's decision values from the kernel against its training rows (n x len(support_rows_))."""
        return K_rows @ self.dual_coef_ + self.intercept_

    def decision_function(self, X: Any, bags: Any) -> np.ndarray:
        """Bag scores: the largest instance score (bags in the order of ``np.unique(bags)``)."""
        K = self._cross(X)
        lists, _ = _bag_lists(bags, len(K))
        f = self._decide(K[:, self.support_rows_])
        return np.array([f[b].max() for b in lists])

    def predict(self, X: Any, bags: Any) -> np.ndarray:
        """Bag labels, in the order of ``np.unique(bags)`` (or of the given index arrays)."""
        self._check_fitted()
        return self.classes_[(self.decision_function(X, bags) > 0).astype(int)]

    def score(self, X: Any, y: Any, bags: Any, sample_weight: Any = None) -> float:
        """Bag-level accuracy of :meth:`predict` against ``y`` (per instance or per bag)."""
        return mil_score(self, X, y, bags)

    def _fit_svm(self, K: np.ndarray, labels: np.ndarray) -> None:
        """libsvm's C-SVC (scikit-learn's SVC) on the precomputed kernel ``K``, kept as dense dual coefficients
        (zero off the support) and the intercept: ``f = K_rows @ dual_coef_ + intercept_``."""
        svm = SVC(kernel="precomputed", C=float(self.C)).fit(K, labels)
        coef = np.zeros(len(K))
        coef[svm.support_] = svm.dual_coef_[0]
        # scikit-learn orders the classes: the decision is positive for its classes_[1], here +1
        self.dual_coef_, self.intercept_ = coef, self._bias(K, labels, coef, float(svm.intercept_[0]))

    def _bias(self, K: np.ndarray, labels: np.ndarray, coef: np.ndarray, optimal: float) -> float:
        """The SVM's bias under ``intercept`` (``optimal``: the solver's)."""
        return optimal if self.intercept == "optimal" else support_mean_intercept(K, labels, coef)

    def _fit_rows(self, K: np.ndarray, rows: np.ndarray, labels: np.ndarray) -> None:
        self.support_rows_ = rows
        self._fit_svm(K[np.ix_(rows, rows)], labels)

    def _check_loaded(self) -> None:
        if len(self.dual_coef_) != len(self.support_rows_):
            raise ValueError(f"{len(self.dual_coef_)} dual coefficients for {len(self.support_rows_)} SVM rows")

    def _capped(self, what: str, changed: int | None = None, of: int | None = None) -> None:
        """The alternation's own criterion did not hold within ``max_iter`` refits: say which, by how much (when
        counted), and how to go on."""
        count = "" if changed is None else f" ({changed} of {of} changed at the last SVM fit)"
        warnings.warn(f"{type(self).__name__} stopped at max_iter={self.max_iter} with the {what} still changing"
                      f"{count}; the last SVM is kept. Increase max_iter", ConvergenceWarning, stacklevel=4)


class _SVMBaseline(_MILBase):
    """The baselines that fit one SVM per step (SIL-SVM, mi-SVM, MI-SVM, the MI-kernel SVM): those of
    :class:`_MILBase`, and the rule of the SVM's bias.

    Parameters
    ----------
    kernels, C, max_iter, verbose, kernel_params, normalize, standardize, kernel_dtype, kernel_backend, memory_budget
        As in :class:`_MILBase`.
    intercept : {"optimal", "support_mean"}, default="optimal"
        How every SVM of the fit sets its bias ``b`` (in ``f = g + b``, ``g(x) = sum_j alpha_j y_j k(x_j, x)``),
        inside the alternation as well as at the end: mi-SVM relabels by ``sign(f)``, so the rule shapes its
        instance labels; MI-SVM's witnesses, a bag's highest ``f``, do not depend on it.

        - ``"optimal"``: the ``b`` of the SVM's optimum (the Karush-Kuhn-Tucker value: ``y_i - g(x_i)`` on the
          free support vectors, those strictly inside their box; libsvm's rule).
        - ``"support_mean"``: the mean of ``y_i - g(x_i)`` over all support vectors, margin violators (their box
          or their bag's shared cap reached) included: the rule of the misvm package (Doran and Ray), see
          :func:`support_mean_intercept`.  A violator with slack ``xi_i`` contributes ``b + y_i xi_i``, so this
          is the optimal ``b`` plus the support vectors' mean signed slack: it enlarges the region of the class
          whose support vectors violate the margin more.  At a small ``C`` most support vectors are violators;
          the optimum's ``b`` then rests on a few free vectors and leans to the class of larger total dual
          weight, in MIL the negative bags' many instances against one witness (MI-SVM) or a few positive
          instances (mi-SVM) per positive bag, and the shift gives part of that back to the positive class.  It
          is not an optimum of the SVM's objective; its effect shrinks as ``C`` grows and fewer vectors violate.
    """

    def __init__(self, kernels: Any = None, C: float = 10.0, max_iter: int = 50, verbose: int = 0,
                 kernel_params: dict[str, Any] | None = None, normalize: str = "none", standardize: bool = False,
                 kernel_dtype: str = "float64", kernel_backend: str = "dense",
                 memory_budget: int | str | None = None, intercept: str = "optimal") -> None:
        super().__init__(kernels=kernels, C=C, max_iter=max_iter, verbose=verbose, kernel_params=kernel_params,
                         normalize=normalize, standardize=standardize, kernel_dtype=kernel_dtype,
                         kernel_backend=kernel_backend, memory_budget=memory_budget)
        self.intercept = intercept


class SILSVM(_SVMBaseline):
    """Single-instance learning: every instance takes its bag's label; one SVM."""

    def _alternate(self, K: np.ndarray, lists: list[np.ndarray], yb: np.ndarray, progress: FitProgress) -> None:
        labels = np.empty(len(K))
        for b, s in zip(lists, yb, strict=True):
            labels[b] = s
        self._fit_rows(K, np.arange(len(K)), labels)
        progress.update()


class miSVM(_SVMBaseline):  # noqa: N801 (the name of Andrews et al.)
    """mi-SVM (Andrews et al. 2003): latent instance labels in positive bags, relabelled by ``sign(f)`` with at
    least one positive per positive bag, until the labels stop changing (a ``ConvergenceWarning`` when they
    still change after ``max_iter`` SVM fits).  Every instance of a positive bag starts positive.  A bag with no
    positive score keeps its best instance positive; a score within 1e-3 of 0 (the SVM's tolerance) keeps its label,
    and on a tie within 1e-3 for the best the one that was positive stays, so the relabelling does not follow the
    solver's rounding round a cycle (``intercept`` acts here: it decides ``sign(f)``)."""

    def _alternate(self, K: np.ndarray, lists: list[np.ndarray], yb: np.ndarray, progress: FitProgress) -> None:
        labels = np.empty(len(K))
        for b, s in zip(lists, yb, strict=True):
            labels[b] = s
        rows = np.arange(len(K))
        pos = [b for b, s in zip(lists, yb, strict=True) if s > 0]
        self.n_iter_ = 0
        for _ in range(self.max_iter):
            self._fit_rows(K, rows, labels)
            self.n_iter_ += 1
            progress.update(keep=_kept)  # Ctrl-C: the last SVM is the model
            f = self._decide(K)
            new = labels.copy()
            for b in pos:
                # sign(f), but a score within the margin of 0 is not resolved: its label stays
                new[b] = np.where(np.abs(f[b]) > _WITNESS_MARGIN, np.sign(f[b]), labels[b])
                # the bag's one positive when none scores above 0: its best instance, or the one it had when that
                # scores as high up to the margin (a tie, as when the optimal w is 0)
                best = b[np.argmax(f[b])]
                held = b[labels[b] > 0]
                if len(held) and f[held].max() >= f[best] - _WITNESS_MARGIN:
                    best = held[np.argmax(f[held])]
                new[best] = 1.0
            changed = int(np.count_nonzero(new != labels))
            if changed == 0:
                break
            labels = new
        else:
            self._capped("instance labels", changed, sum(len(b) for b in pos))


class MISVM(_SVMBaseline):
    """MI-SVM (Andrews et al. 2003): each positive bag is represented by its highest-scoring instance (the
    witness), each negative bag by all its instances under one slack; alternate until the witnesses stop
    changing (a ``ConvergenceWarning`` when they still change after ``max_iter`` SVM fits).

    The SVM is the one of the paper, ``min 1/2 ||w||^2 + C sum_B xi_B`` with ``Y_B max_{x in B} f(x) >= 1 - xi_B``:
    one slack per bag, so a negative bag's instances share theirs (in the dual, the bag's variables sum to at
    most ``C``) and a bag weighs the same whatever its size.  Per-instance slacks would give a negative bag of
    ``|B|`` instances ``|B|`` times the weight of a positive one.  Given the witnesses this SVM is convex and
    its bias (``intercept="optimal"``) the exact optimum (the Karush-Kuhn-Tucker value); no alternation step
    raises the paper's objective (the SVM minimises it for the witnesses, and new witnesses, the positive bags'
    best instances, only lower their slacks), so the alternation stops up to ties among the finitely many
    witness choices; a witness changes only for an instance that scores more than 1e-3 (the SVM's tolerance)
    higher, so ties do not cycle.  The witnesses do not depend on the bias, so ``intercept`` changes only the
    final ``b``.

    The first SVM represents each positive bag by its mean in the kernel's feature space (its kernel entries
    are averages of the bag's kernel rows), so the first witnesses are chosen by a classifier that has seen
    every instance of the positive bags.  Andrews et al. start from the bags' centroids; the misvm package
    takes them in the input space (the kernel of the mean instance), which for a non-linear kernel is another
    start and may end at other witnesses.
    """

    def _alternate(self, K: np.ndarray, lists: list[np.ndarray], yb: np.ndarray, progress: FitProgress) -> None:
        if not (yb < 0).any():
            raise ValueError("MI-SVM needs negative bags")
        negative = [b for b, s in zip(lists, yb, strict=True) if s < 0]
        neg = np.concatenate(negative)
        pos = [b for b, s in zip(lists, yb, strict=True) if s > 0]
        labels = np.r_[np.ones(len(pos)), -np.ones(len(neg))]
        # the SVM's samples: the positive bags' representatives (a slack each), then the negative instances
        # (the slack of their bag)
        slack = np.r_[np.arange(len(pos)), len(pos) + np.repeat(np.arange(len(negative)), [len(b) for b in negative])]
        # the bag means: M = S K with S the averaging rows, so k(mean_b, x) = M[b, x] and k(mean_b, mean_c) =
        # M[b] S_c'; one SVM on the means and the negative instances, scored on every instance
        M = np.stack([K[b].mean(axis=0) for b in pos])
        means = np.stack([M[:, b].mean(axis=1) for b in pos], axis=1)
        units = np.block([[means, M[:, neg]], [M[:, neg].T, K[np.ix_(neg, neg)]]])
        coef, bias = self._bag_slack_svm(units, labels, slack)
        f = np.hstack([M.T, K[:, neg]]) @ coef + bias
        witness = _witnesses(f, pos)
        self.n_iter_ = 1
        for _ in range(self.max_iter - 1):
            rows = np.r_[witness, neg]
            self._fit_witnesses(K, rows, labels, slack)
            self.n_iter_ += 1
            progress.update(keep=_kept)  # Ctrl-C: the last SVM is the model
            f = self._decide(K[:, rows])
            new = _witnesses(f, pos, witness)
            changed = int(np.count_nonzero(new != witness))
            if changed == 0:
                break
            witness = new
        else:
            if self.max_iter == 1:  # the means' SVM only: the classifier is the SVM of its witnesses
                self._fit_witnesses(K, np.r_[witness, neg], labels, slack)
                changed = len(pos)  # every witness was chosen by the means' SVM, none confirmed by a refit
            self._capped("witnesses", changed, len(pos))

    def _fit_witnesses(self, K: np.ndarray, rows: np.ndarray, labels: np.ndarray, slack: np.ndarray) -> None:
        """The model: the shared-slack SVM on the training ``rows`` (set together, so Ctrl-C keeps a whole one)."""
        coef, bias = self._bag_slack_svm(K[np.ix_(rows, rows)], labels, slack)
        self.support_rows_, self.dual_coef_, self.intercept_ = rows, coef, bias

    def _bag_slack_svm(self, K: np.ndarray, labels: np.ndarray, slack: np.ndarray) -> tuple[np.ndarray, float]:
        """The C-SVC whose samples share slacks (``slack``: the slack of each sample): ``(alpha * labels, b)``,
        ``b`` under ``intercept``."""
        coef, b = bag_slack_svm(K, labels, slack, float(self.C), name=type(self).__name__)
        return coef, self._bias(K, labels, coef, b)


def support_mean_intercept(K: np.ndarray, labels: np.ndarray, coef: np.ndarray) -> float:
    """misvm's bias of a fitted SVM: the mean of ``y_i - g(x_i)`` over its support vectors, bounded ones included.

    ``g(x) = sum_j coef_j k(x_j, x)`` is the SVM's decision without bias.  For a free support vector
    ``y_i - g(x_i)`` is the optimal ``b``; for one with slack ``xi_i`` it is ``b + y_i xi_i``, so the mean is the
    optimal ``b`` shifted by the support vectors' mean signed slack (``SVM._compute_separator`` of the misvm
    package, Doran and Ray).

    Parameters
    ----------
    K : ndarray of shape (n, n)
        The kernel of the SVM's samples.
    labels : ndarray of shape (n,)
        Their labels in {-1, +1}.
    coef : ndarray of shape (n,)
        ``alpha_i y_i``; the support vectors are its non-zero entries.

    Returns
    -------
    b : float
        ``0`` when there is no support vector (misvm's value then).
    """
    sv = np.flatnonzero(coef)
    if len(sv) == 0:
        return 0.0
    return float(np.mean(labels[sv] - K[np.ix_(sv, sv)] @ coef[sv]))


def bag_slack_svm(K: np.ndarray, labels: np.ndarray, slack: np.ndarray, C: float, tol: float = 1e-3,
                  max_iter: int | None = None, name: str = "the SVM") -> tuple[np.ndarray, float]:
    """The C-SVC with one slack per group of samples: ``min 1/2 ||w||^2 + C sum_g xi_g`` subject to
    ``y_i f(x_i) >= 1 - xi_g`` for every sample ``i`` of group ``g``.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        The samples' kernel.
    labels : ndarray of shape (n,)
        In {-1, +1}, one label per group.
    slack : ndarray of shape (n,)
        The group (slack) of each sample, any integers.
    C : float
        The cost of a slack.
    tol : float, default=1e-3
        The largest violation of the Karush-Kuhn-Tucker conditions at the end (libsvm's stopping rule).
    max_iter : int, optional
        Largest number of pair steps; by default libsvm's rule (:func:`~multikernel.solve.smo.default_max_iter`).
    name : str
        Who asks, for the warning.

    Returns
    -------
    coef : ndarray of shape (n,)
        ``alpha_i y_i``, so that ``f = K_rows @ coef + b``.
    b : float
    """
    _, group = np.unique(slack, return_inverse=True)
    first = labels[np.unique(group, return_index=True)[1]]
    if np.any(labels != first[group]):
        raise ValueError("the samples that share a slack must share their label")
    # a group of one sample is a sample with a cap of its own: the solver's cheaper case
    size = np.bincount(group)
    ids = np.full(len(size), -1, dtype=np.intp)
    ids[size > 1] = np.arange(np.count_nonzero(size > 1))
    group = ids[group]
    limit = default_max_iter(len(labels)) if max_iter is None else int(max_iter)
    alpha, b, _, violation, interrupted = solve_group_svm(np.ascontiguousarray(K, dtype=np.float64),
                                                          np.ascontiguousarray(labels, dtype=np.float64),
                                                          group, np.count_nonzero(size > 1), C, tol, limit)
    if interrupted:
        raise KeyboardInterrupt
    if violation >= tol:
        warnings.warn(f"{name}: the shared-slack SVM stopped at its iteration limit with a KKT violation of "
                      f"{violation:.3g} > tol={tol:g}; its solution is approximate. Raise max_iter; a smaller C "
                      f"or rescaled features converge faster", ConvergenceWarning, stacklevel=3)
    return alpha * labels, float(b)


class MIKernelSVM(_SVMBaseline):
    """The MI-kernel (set kernel) SVM of Gärtner et al. (2002): ``k(B, B') = sum_{x in B, x' in B'} k(x, x')``,
    normalised by the bag sizes, and one SVM over bags."""

    def _alternate(self, K: np.ndarray, lists: list[np.ndarray], yb: np.ndarray, progress: FitProgress) -> None:
        self.S_ = self._membership(lists, len(K))
        self.support_rows_ = np.arange(len(lists))  # the SVM is over the training bags
        self._fit_svm(self.S_ @ K @ self.S_.T, yb)
        progress.update()

    @staticmethod
    def _membership(lists: list[np.ndarray], n: int) -> np.ndarray:
        S = np.zeros((len(lists), n))
        for i, b in enumerate(lists):
            S[i, b] = 1.0 / len(b)
        return S

    def decision_function(self, X: Any, bags: Any) -> np.ndarray:
        """Bag scores of the set-kernel SVM (bags in the order of ``np.unique(bags)``)."""
        K = self._cross(X)
        lists, _ = _bag_lists(bags, len(K))
        return self._decide(self._membership(lists, len(K)) @ K @ self.S_.T)
