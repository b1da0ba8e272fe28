"""The built-in task kinds, registered through the hook ``multikernel_task_kinds`` like a third party's.

Each is a :class:`~multikernel.core.tasks.TaskKind`: what its data are, how they are split, how an estimator of
the kind is fitted and measured.  The experiment runner, ``multikernel validate`` and the reports keep no code of
their own for any of them (see docs/plugins.md for adding a kind).
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score
from sklearn.model_selection import StratifiedKFold, StratifiedShuffleSplit
from sklearn.neighbors import KNeighborsClassifier

from multikernel.core.hookspecs import hookimpl
from multikernel.core.tasks import TaskKind
from multikernel.errors import ConfigError

__all__ = ["Classification", "MultiLabelRanking", "SemiSupervised", "MultipleInstance", "Clustering",
           "Bilinear", "CrossModal", "MetricLearning", "Regression", "OutlierDetection", "clustering_accuracy"]


def clustering_accuracy(y_true: Any, labels: Any) -> float:
    """The fraction of samples in agreement under the best one-to-one matching of clusters to classes
    (Hungarian algorithm on the contingency table); clusters left unmatched count as errors."""
    y_true, labels = np.asarray(y_true), np.asarray(labels)
    classes, yi = np.unique(y_true, return_inverse=True)
    clusters, ci = np.unique(labels, return_inverse=True)
    table = np.zeros((len(clusters), len(classes)))
    np.add.at(table, (ci, yi), 1)
    rows, cols = linear_sum_assignment(-table)
    return float(table[rows, cols].sum() / len(y_true))


def _accuracy(predicted: Any, truth: Any) -> dict[str, float]:
    return {"accuracy": float(np.mean(np.asarray(predicted) == np.asarray(truth)))}


class Classification(TaskKind):
    description = "classification of feature vectors (fit(X, y), predict; accuracy)"

    def evaluate(self, estimator: Any, data: Any, train: Any, test: Any, *, setting: Any = None,
                 neighbors: int = 3, seed: int = 0) -> dict[str, float]:
        estimator.fit(data.X[train], data.y[train])
        return _accuracy(estimator.predict(data.X[test]), data.y[test])


class Bilinear(Classification):
    description = "classification of matrix samples (n, p, q): fit(X, y), predict; accuracy"
    samples = "matrices"


class MultiLabelRanking(TaskKind):
    description = "multi-label ranking (fit(X, Y), one score per label; NaN = unknown label)"
    labels = "matrix"
    task_settings = frozenset({"missing"})
    measures = (("example_auc", True), ("example_ap", True), ("label_map", True), ("ranking_loss", False),
                ("one_error", False), ("coverage", False), ("lrap", True), ("coverage_sklearn", False))

    def settings(self, task: Any) -> list[Any]:
        return list(task.missing)

    def setting_name(self, task: Any, setting: Any) -> str:
        return f"missing={setting:g}"

    def probe_setting(self, task: Any) -> Any:
        return max(task.missing)

    def probe(self, data: Any, size: int = 40) -> tuple[Any, Any, Any]:
        """``size`` random samples, three quarters trained, and in training for every label an irrelevant sample
        and the three relevant ones with the fewest relevant labels: learners with one binary problem per label
        (ML-MKL, one-vs-rest) refuse a label constant in training, which a few random samples of a rare label
        would be, and the missing-label protocol keeps a sample's only relevant label."""
        rows = np.random.default_rng(0).permutation(data.n_samples)[:size]
        train, test = rows[:len(rows) * 3 // 4], rows[len(rows) * 3 // 4:]
        Y = np.nan_to_num(np.asarray(data.y, dtype=np.float64))
        extra: list[np.ndarray] = []
        for label in range(Y.shape[1]):
            relevant = np.setdiff1d(np.flatnonzero(Y[:, label] == 1), test)
            irrelevant = np.setdiff1d(np.flatnonzero(Y[:, label] == 0), test)
            extra += [relevant[np.argsort(Y[relevant].sum(axis=1), kind="stable")][:3], irrelevant[:1]]
        train = np.unique(np.concatenate([train, *extra]))
        return data.subset(np.r_[train, test]), np.arange(len(train)), np.arange(len(train), len(train) + len(test))

    def evaluate(self, estimator: Any, data: Any, train: Any, test: Any, *, setting: Any = None,
                 neighbors: int = 3, seed: int = 0) -> dict[str, float]:
        from multikernel.ranking.labels import drop_positive_labels
        from multikernel.ranking.metrics import ranking_scores

        Y = data.y[train]
        if setting:
            Y = drop_positive_labels(Y, float(setting), random_state=seed)
        estimator.fit(data.X[train], Y)
        return ranking_scores(data.y[test], estimator.decision_function(data.X[test]))


class SemiSupervised(TaskKind):
    description = "semi-supervised binary classification (y == -1 unlabelled, transductive accuracy)"
    binary = True
    transductive = True
    task_settings = frozenset({"labeled"})
    has_folds = False
    no_folds_reason = "each repeat draws the labelled samples"

    def check_task(self, task: Any) -> None:
        if not task.labeled:
            raise ConfigError("needs at least one number of labelled samples", "task.labeled")
        for j, n in enumerate(task.labeled):
            if n < 2:
                raise ConfigError(f"at least 2 labelled samples (one per class) are needed; got {n}",
                                  f"task.labeled[{j}]")

    def settings(self, task: Any) -> list[Any]:
        return list(task.labeled)

    def setting_name(self, task: Any, setting: Any) -> str:
        return f"labeled={setting}"

    def splits(self, task: Any, data: Any, dataset: Any, settings: Any, repeat: int, setting: Any
               ) -> list[tuple[Any, Any]]:
        """``setting`` random labelled samples, at least one of each class, and the others."""
        rng = np.random.default_rng(settings.seed + repeat)
        n_labeled, classes = int(setting), np.unique(data.y)
        if n_labeled < len(classes) or n_labeled >= len(data.y):
            raise ValueError(f"{n_labeled} labelled samples: need at least one per class ({len(classes)}) and an "
                             f"unlabelled one ({len(data.y)} samples)")
        first = np.array([rng.choice(np.flatnonzero(data.y == c)) for c in classes])
        rest = np.setdiff1d(np.arange(len(data.y)), first)
        labeled = np.sort(np.r_[first, rng.choice(rest, n_labeled - len(first), replace=False)])
        return [(labeled, np.setdiff1d(np.arange(data.n_samples), labeled))]

    def selection_folds(self, data: Any, train: Any, k: int, seed: int) -> list[tuple[Any, Any]]:
        """Hide one fold of the labelled samples at a time (every other sample stays unlabelled); a class with a
        single labelled sample keeps it labelled in every fold (the draw guarantees only one per class)."""
        classes, counts = np.unique(data.y[train], return_counts=True)
        kept = np.isin(data.y[train], classes[counts < 2])
        movable = train[~kept]
        if len(movable) == 0:
            raise ValueError(f"{len(train)} labelled samples, one of each class: no cross-validation can choose a "
                             f"grid point (label more samples, or give the estimator one value)")
        inner = StratifiedKFold(min(k, int(counts[counts >= 2].min())), shuffle=True, random_state=seed)
        return [(np.sort(np.r_[train[kept], movable[a]]), movable[b]) for a, b in inner.split(movable, data.y[movable])]

    def check_more(self, data: Any, source: str, task: Any, settings: Any, path: str, searched: bool) -> None:
        n_classes = len(np.unique(data.y))
        for j, n in enumerate(task.labeled):
            if not n_classes <= n < data.n_samples:
                raise ConfigError(f"{n} labelled samples of {data.n_samples}: need at least one per class and an "
                                  f"unlabelled sample", f"task.labeled[{j}]")
            if searched and n <= n_classes:
                raise ConfigError(f"{n} labelled samples, one of each class: no cross-validation can choose grid "
                                  f"points; label at least {n_classes + 1}, or give each estimator one value",
                                  f"task.labeled[{j}]")

    def evaluate(self, estimator: Any, data: Any, train: Any, test: Any, *, setting: Any = None,
                 neighbors: int = 3, seed: int = 0) -> dict[str, float]:
        classes, codes = np.unique(data.y, return_inverse=True)
        given = np.full(data.n_samples, -1, dtype=np.int64)
        given[train] = codes[train]
        estimator.fit(data.X, given)
        # The transductive labels when the estimator gives them for every test sample (SelfTrainingClassifier's
        # transduction_ keeps -1 for the samples it never labelled): else its inductive predictions.
        found = getattr(estimator, "transduction_", None)
        found = None if found is None else np.asarray(found)[test]
        predicted = found if found is not None and not np.any(found == -1) else estimator.predict(data.X[test])
        return _accuracy(predicted, codes[test])


def _bag_table(data: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bag ids (sorted), each instance's bag index, and each bag's label."""
    bags, inverse = np.unique(data.groups, return_inverse=True)
    labels = np.empty(len(bags), dtype=data.y.dtype)
    labels[inverse] = data.y
    return bags, inverse, labels


class MultipleInstance(TaskKind):
    description = "multiple-instance binary classification (fit(X, y, bags), bag accuracy)"
    bags = "required"
    binary = True

    def folds(self, data: Any, rows: Any, k: int, seed: int) -> list[tuple[Any, Any]]:
        """Whole bags in each fold, stratified by the bags' labels."""
        _, inverse, labels = _bag_table(data)
        bags = np.unique(inverse[rows])
        cv = StratifiedKFold(k, shuffle=True, random_state=seed)
        return [(rows[np.isin(inverse[rows], bags[tr])], rows[np.isin(inverse[rows], bags[te])])
                for tr, te in cv.split(bags, labels[bags])]

    def splits(self, task: Any, data: Any, dataset: Any, settings: Any, repeat: int, setting: Any
               ) -> list[tuple[Any, Any]]:
        if task.folds >= 2:
            return self.folds(data, np.arange(data.n_samples), task.folds, settings.seed + repeat)
        size = {"train_size": dataset.train_size} if dataset.train_size else {"test_size": settings.test_fraction}
        _, inverse, labels = _bag_table(data)
        tr, te = next(StratifiedShuffleSplit(1, random_state=settings.seed + repeat, **size).split(labels, labels))
        return [(np.flatnonzero(np.isin(inverse, tr)), np.flatnonzero(np.isin(inverse, te)))]

    def probe(self, data: Any, size: int = 40) -> tuple[Any, Any, Any]:
        """The three smallest bags of each class (a probe fit of a cutting-plane learner stays quick), the last
        bag of each class tested."""
        bags, inverse, labels = _bag_table(data)
        sizes = np.bincount(inverse)
        chosen = np.concatenate([sorted(np.flatnonzero(labels == c), key=lambda b: (sizes[b], b))[:3]
                                 for c in np.unique(labels)])
        rows = np.flatnonzero(np.isin(inverse, chosen))
        small = data.subset(rows)
        sb = np.unique(small.groups)
        test_bags = [b for c in np.unique(labels) for b in sb[labels[np.searchsorted(bags, sb)] == c][-1:]]
        test = np.flatnonzero(np.isin(small.groups, test_bags))
        return small, np.setdiff1d(np.arange(len(rows)), test), test

    def evaluate(self, estimator: Any, data: Any, train: Any, test: Any, *, setting: Any = None,
                 neighbors: int = 3, seed: int = 0) -> dict[str, float]:
        estimator.fit(data.X[train], data.y[train], data.groups[train])
        _, _, labels = _bag_table(data.subset(test))
        return _accuracy(estimator.predict(data.X[test], data.groups[test]), labels)


class Clustering(TaskKind):
    description = "clustering (fit_predict(X); clustering accuracy and NMI against the labels)"
    measures = (("accuracy", True), ("nmi", True), ("ari", True))
    transductive = True
    has_folds = False
    no_folds_reason = "every sample is clustered"
    can_select = False

    def splits(self, task: Any, data: Any, dataset: Any, settings: Any, repeat: int, setting: Any
               ) -> list[tuple[Any, Any]]:
        everything = np.arange(data.n_samples)
        return [(everything, everything)]

    def folds(self, data: Any, rows: Any, k: int, seed: int) -> list[tuple[Any, Any]]:
        return [(rows, rows)] * k

    def probe(self, data: Any, size: int = 40) -> tuple[Any, Any, Any]:
        small, _, _ = super().probe(data, size)
        everything = np.arange(small.n_samples)
        return small, everything, everything

    def evaluate(self, estimator: Any, data: Any, train: Any, test: Any, *, setting: Any = None,
                 neighbors: int = 3, seed: int = 0) -> dict[str, float]:
        found = estimator.fit_predict(data.X)
        return {"accuracy": clustering_accuracy(data.y, found),
                "nmi": float(normalized_mutual_info_score(data.y, found)),
                "ari": float(adjusted_rand_score(data.y, found))}


class CrossModal(TaskKind):
    description = ("two modalities of the same classes (features and the second view 'privileged'): "
                   "fit(Xa, ya, Xb, yb), transform(X, modality); rank-1 retrieval across modalities")
    measures = (("rank1", True), ("rank1_a_to_b", True), ("rank1_b_to_a", True))
    privileged = "required"

    def probe(self, data: Any, size: int = 40) -> tuple[Any, Any, Any]:
        """The last two samples of each class tested (one per modality): both keep every class in training."""
        small, _, _ = super().probe(data, size)
        lasts = np.concatenate([np.flatnonzero(small.y == c)[-2:] for c in np.unique(small.y)])
        return small, np.setdiff1d(np.arange(small.n_samples), lasts), lasts

    def evaluate(self, estimator: Any, data: Any, train: Any, test: Any, *, setting: Any = None,
                 neighbors: int = 3, seed: int = 0) -> dict[str, float]:
        """Unpaired cross-modal learning as in Kobayashi 2014 (sec. 5.2): the samples of each part are split in two
        halves (alternately within each class), the first seen only in modality a, the second only in modality b;
        the test probes of one modality retrieve the test gallery of the other (rank-1: the nearest is of its
        class)."""
        from multikernel.bilinear.crossmodal import retrieval_ranks

        Xa, Xb, y = data.X, data.privileged, data.y

        def halves(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            a = np.concatenate([rows[y[rows] == c][0::2] for c in np.unique(y[rows])])
            return np.sort(a), np.setdiff1d(rows, a)

        (tr_a, tr_b), (te_a, te_b) = halves(train), halves(test)
        if not len(te_a) or not len(te_b):
            raise ValueError(f"{len(test)} test sample(s): too few to give both modalities a test half")
        estimator.fit(Xa[tr_a], y[tr_a], Xb[tr_b], y[tr_b])
        za, zb = estimator.transform(Xa[te_a], "a"), estimator.transform(Xb[te_b], "b")
        a_to_b = float(np.mean(retrieval_ranks(za, y[te_a], zb, y[te_b]) == 1))
        b_to_a = float(np.mean(retrieval_ranks(zb, y[te_b], za, y[te_a]) == 1))
        return {"rank1": 0.5 * (a_to_b + b_to_a), "rank1_a_to_b": a_to_b, "rank1_b_to_a": b_to_a}


class MetricLearning(TaskKind):
    description = "metric learning (fit(X, y), transform; k-NN accuracy in the learnt metric)"
    privileged = "optional"
    task_settings = frozenset({"neighbors"})

    def evaluate(self, estimator: Any, data: Any, train: Any, test: Any, *, setting: Any = None,
                 neighbors: int = 3, seed: int = 0) -> dict[str, float]:
        extra = {}
        if data.privileged is not None and "X_privileged" in inspect.signature(estimator.fit).parameters:
            extra["X_privileged"] = data.privileged[train]
        estimator.fit(data.X[train], data.y[train], **extra)
        knn = KNeighborsClassifier(neighbors).fit(estimator.transform(data.X[train]), data.y[train])
        return {"accuracy": float(knn.score(estimator.transform(data.X[test]), data.y[test]))}


class Regression(TaskKind):
    description = "regression of a continuous target (fit(X, y), predict; R^2 and mean absolute error)"
    labels = "continuous"
    measures = (("r2", True), ("mae", False))

    def evaluate(self, estimator: Any, data: Any, train: Any, test: Any, *, setting: Any = None,
                 neighbors: int = 3, seed: int = 0) -> dict[str, float]:
        from sklearn.metrics import mean_absolute_error, r2_score

        estimator.fit(data.X[train], data.y[train])
        predicted = estimator.predict(data.X[test])
        return {"r2": float(r2_score(data.y[test], predicted)),
                "mae": float(mean_absolute_error(data.y[test], predicted))}


class OutlierDetection(TaskKind):
    description = ("outlier detection (fit(X) on the training samples, labels unused; decision_function: higher = "
                   "more normal): AUC and accuracy against the labels, the majority class of the training part "
                   "being the normal one")
    measures = (("auc", True), ("accuracy", True))

    def evaluate(self, estimator: Any, data: Any, train: Any, test: Any, *, setting: Any = None,
                 neighbors: int = 3, seed: int = 0) -> dict[str, float]:
        from sklearn.metrics import roc_auc_score

        classes, counts = np.unique(data.y[train], return_counts=True)
        normal = data.y[test] == classes[np.argmax(counts)]
        estimator.fit(data.X[train])
        scores = estimator.decision_function(data.X[test])
        auc = float(roc_auc_score(normal, scores)) if 0 < normal.sum() < len(normal) else float("nan")
        return {"auc": auc, "accuracy": _accuracy(estimator.predict(data.X[test]) == 1, normal)["accuracy"]}


@hookimpl
def multikernel_task_kinds() -> dict[str, type[TaskKind]]:
    return {"classification": Classification, "bilinear": Bilinear, "multilabel_ranking": MultiLabelRanking,
            "ssl": SemiSupervised, "mil": MultipleInstance, "clustering": Clustering, "crossmodal": CrossModal,
            "metric": MetricLearning, "regression": Regression, "outlier_detection": OutlierDetection}
