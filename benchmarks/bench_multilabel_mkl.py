"""ML-MKL-SA against the sum form's deterministic solvers (ML-MKL-Sum), one run, same problem.

Every contender minimises the same objective (the sum form: ``T`` C-SVMs sharing simplex weights over 10
kernels) on the same training stack:

* ``sum/<solver>``: :func:`multikernel.solve.fit.fit_mkl` with ``shared=True`` and a deterministic outer solver
  (``level``: the ``l1mkl`` preset; ``reduced_gradient``: SimpleMKL; ``bcd``: the closed-form update), every
  iteration solving the ``T`` SVMs;
* ``sa``: the ``ml_mkl_sa`` solver (its defaults: a batch of ``ceil(sqrt(T))`` sampled labels per step, SAGA
  gradient estimate, a certification every half epoch), seeded;
* ``sa/sampled``: the same with the thesis's gradient estimate (eq. 3.8).

The reference optimum ``F*`` is the level method's at ``tol = 1e-5``.  "Time to an objective within 1 % of
``F*``" is measured two ways, both from the start of the fit (wall clock):

* **certified**: until the solver's own best certified upper bound ``F(mu)`` is within 1 % of ``F*``: the
  solver has weights within 1 % *and knows it* (it solved all ``T`` SVMs there);
* **reached**: until the solver first forms the combined kernel ``K(mu)`` at weights ``mu`` with
  ``F(mu) <= 1.01 F*``: the time at which it holds such weights (for the level method its new iterate, for SA a
  step's iterate or a round's average), whether or not it has evaluated them yet.  ``F(mu)`` is evaluated by
  this script after the fit, off the clock (every label's SVM on ``K(mu)`` at inner tolerance 1e-5); the
  weights are recorded by wrapping :class:`multikernel.stack.combination.CombinedKernel` for the fit.

Also: the time until the certified relative gap is below 1e-2, the final objective and gap, and the test
ranking measures of each model: AUC per label (scikit-learn's ``roc_auc_score`` on each label's column of the
decision values, averaged over the labels) and ranking loss (``label_ranking_loss``).  The machine is shared, so
the ratio of two contenders in one run is what to read.  Kernels: 7 RBF (``gamma = s / mean squared
distance``, ``s = 2^-3 .. 2^3``) and polynomial of degrees 1, 2, 3 on the standardized features,
trace-normalized; one random 50/50 split (``--seed``).

Usage::

    python benchmarks/bench_multilabel_mkl.py                         # yeast and emotions, C = 1
    python benchmarks/bench_multilabel_mkl.py --datasets emotions --C 0.1 1
    python benchmarks/bench_multilabel_mkl.py --json results.json
    python benchmarks/bench_multilabel_mkl.py --synthetic 8 32 128 --contenders sum/level sa   # labels trend
    python benchmarks/bench_multilabel_mkl.py --baseline 94a3421    # also "sa@94a3421": SA as at that commit

``--baseline REV`` adds the contender ``sa@REV``: the ``ml_mkl_sa`` solver's source at git revision ``REV``
(``plugins/ml_mkl_sa.py``, loaded from ``git show``) with its own defaults, so that a change of the solver is
measured before and after in one run, on the same load; ``--sa-param batch=2`` sets parameters of the ``sa``
contender's solver (and of ``sa/sampled``'s).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib.util
import json
import platform
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import label_ranking_loss, roc_auc_score
from sklearn.model_selection import train_test_split

from multikernel import create
from multikernel.solve.fit import SolveSettings, build_parts, encode_targets, fit_mkl
from multikernel.stack.combination import CombinedKernel
from multikernel.stack.kernelset import KernelSet

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
RBF_SCALES = tuple(2.0 ** k for k in range(-3, 4))


def load_multilabel(name: str, data_dir: Path = DATA) -> tuple[np.ndarray, np.ndarray]:
    """Features and the 0/1 label matrix of a MULAN set in ``data_dir`` (columns ``label:*``)."""
    import pandas as pd

    df = pd.read_csv(data_dir / f"{name}.csv")
    labels = [c for c in df.columns if c.startswith("label:")]
    return df.drop(columns=labels).to_numpy(float), df[labels].to_numpy().astype(int)


def kernel_set() -> KernelSet:
    """The 10 kernels of the benchmark (and of the multi-label experiment)."""
    builders = [create("kernel", "rbf", gamma_scale=s) for s in RBF_SCALES]
    builders += [create("kernel", "linear")] + [create("kernel", "poly", degree=d, gamma=1.0) for d in (2, 3)]
    return KernelSet(builders, normalize="trace", standardize=True)


def ranking_scores(Y: np.ndarray, scores: np.ndarray) -> dict[str, float]:
    """Mean AUC over the labels with both values in ``Y`` (category-based) and the ranking loss."""
    aucs = [roc_auc_score(Y[:, j], scores[:, j]) for j in range(Y.shape[1]) if 0 < Y[:, j].sum() < len(Y)]
    return {"auc": float(np.mean(aucs)), "ranking_loss": float(label_ranking_loss(Y, scores))}


CONTENDERS = [("sum/level", "l1mkl", None), ("sum/reduced_gradient", "l1mkl", "reduced_gradient"),
              ("sum/bcd", "l1mkl", "bcd"), ("sa", "ml_mkl_sa", None), ("sa/sampled", "ml_mkl_sa", "sampled")]


@contextlib.contextmanager
def recording_weights(start: float, log: list[tuple[float, np.ndarray]]):
    """Record ``(time since start, weights)`` whenever a solver forms ``K(mu)`` (for the "reached" measure)."""
    original = CombinedKernel.__call__

    def call(self, weights):
        log.append((time.perf_counter() - start, np.array(weights, dtype=np.float64)))
        return original(self, weights)

    CombinedKernel.__call__ = call
    try:
        yield log
    finally:
        CombinedKernel.__call__ = original


def baseline_solver(rev: str) -> type:
    """The ``MLMKLSA`` class of ``plugins/ml_mkl_sa.py`` at git revision ``rev`` (a module of its own)."""
    root = Path(__file__).resolve().parents[1]
    source = subprocess.run(["git", "show", f"{rev}:plugins/ml_mkl_sa.py"], cwd=root, check=True,
                            capture_output=True, text=True).stdout
    name = f"_ml_mkl_sa_at_{rev.replace('/', '_').replace('~', '_').replace('^', '_')}"
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader=None))
    sys.modules[name] = module  # dataclasses and pickling look the module up by name
    exec(compile(source, f"{rev}:plugins/ml_mkl_sa.py", "exec"), module.__dict__)
    return module.MLMKLSA


def run(method: str, solver: str | None, stack, targets, C: float, tol: float, seed: int,
        max_iter: int = 500, inner_tol: float = 1e-3,
        sa_params: dict | None = None) -> tuple[object, list[dict], list[tuple[float, np.ndarray]]]:
    """One fit with a time stamp on each recorded iteration and the weights of each combination formed
    (``solver="sampled"``: SA with the thesis's gradient estimate; ``solver="@REV"``: SA as at git revision
    ``REV``)."""
    params: dict = {"C": C}
    baseline = None
    if method == "ml_mkl_sa":
        params["solver__random_state"] = seed
        if solver in (None, "sampled"):
            params.update({f"solver__{k}": v for k, v in (sa_params or {}).items()})
        if solver == "sampled":
            solver, params["solver__gradient"] = None, "sampled"
        elif solver is not None and solver.startswith("@"):
            baseline, solver = baseline_solver(solver[1:]), None
    parts = build_parts(method, solver=solver, params=params)
    if baseline is not None:
        parts.solver = baseline(random_state=seed)
    trace: list[dict] = []
    formed: list[tuple[float, np.ndarray]] = []
    start = time.perf_counter()

    def stamp(entry: dict) -> None:
        trace.append({**entry, "time": time.perf_counter() - start})

    with warnings.catch_warnings(), recording_weights(start, formed):
        warnings.simplefilter("ignore", ConvergenceWarning)
        fitted = fit_mkl(stack, targets, parts, SolveSettings(tol=tol, max_iter=max_iter, inner_tol=inner_tol),
                         shared=True, callback=stamp)
    fitted.fit_time = time.perf_counter() - start
    return fitted, trace, formed


def objective(stack, targets, C: float, mu: np.ndarray) -> float:
    """``F(mu)``: the sum of the labels' SVM primal objectives on ``K(mu)`` (the simplex has no penalty)."""
    loss = build_parts("l1mkl", params={"C": C}).loss
    K = stack.combine(mu)
    return float(sum(loss.solve(K, y, alpha0=None, tol=1e-5).primal_objective for y in targets.blocks))


def reached(formed: list[tuple[float, np.ndarray]], stack, targets, C: float, f_star: float) -> float:
    """The first time weights with ``F(mu) <= 1.01 F*`` were formed (evaluated now, off the clock)."""
    last = None
    for t, mu in formed:
        if last is not None and np.array_equal(mu, last):
            continue
        last = mu
        if objective(stack, targets, C, mu) <= 1.01 * f_star:
            return t
    return float("nan")


def first(trace: list[dict], test) -> tuple[float, int]:
    best = np.inf
    for i, e in enumerate(trace):
        best = min(best, e["upper"])
        if test(e, best):
            return e["time"], e.get("svm_solves", i + 1)
    return float("nan"), -1


def synthetic(labels: int, n: int = 600, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A multi-label set with ``labels`` correlated labels: each a thresholded random mix of 5 shared nonlinear
    latent features of 20 Gaussian inputs, plus noise (real label sets share structure the same way)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 20))
    latent = np.tanh(X @ rng.normal(size=(20, 5)) / np.sqrt(20)) + 0.3 * (X[:, :5] ** 2 - 1)
    scores = latent @ rng.normal(size=(5, labels)) + 0.5 * rng.normal(size=(n, labels))
    return X, (scores > np.quantile(scores, 0.7, axis=0)).astype(int)  # about 30 % positives per label


def bench(name: str, C: float, seed: int, tol: float, data_dir: Path = DATA, max_iter: int = 40,
          contenders: list[str] | None = None, baseline: str | None = None, inner_tol: float = 1e-3,
          sa_params: dict | None = None) -> list[dict]:
    if name.startswith("synthetic"):
        X, Y = synthetic(int(name.removeprefix("synthetic")), seed=seed)
    else:
        X, Y = load_multilabel(name, data_dir)
    Xtr, Xte, Ytr, Yte = train_test_split(X, Y, train_size=0.5, random_state=seed)
    keep = (Ytr.sum(0) > 0) & (Ytr.sum(0) < len(Ytr))  # a label with one value in training has no SVM
    Ytr, Yte = Ytr[:, keep], Yte[:, keep]
    ks = kernel_set()
    stack = ks.fit_stack(Xtr)
    cross = ks.cross_stack(Xte)
    targets = encode_targets(Ytr)
    T = targets.n_blocks
    ref, _, _ = run("l1mkl", None, stack, targets, C, 1e-5, seed)
    f_star = float(ref.results[0].objective)
    rows = []
    extra = [(f"sa@{baseline}", "ml_mkl_sa", f"@{baseline}")] if baseline else []
    for label, method, solver in CONTENDERS + extra:
        if contenders and label not in contenders and not label.startswith("sa@"):
            continue
        fitted, trace, formed = run(method, solver, stack, targets, C, tol, seed, max_iter, inner_tol,
                                    sa_params)
        res = fitted.results[0]
        for e, h in zip(trace, res.history, strict=True):  # SA counts its solves; the others solve T per iteration
            e["svm_solves"] = h.get("svm_solves", T * h["iteration"])
        t1, s1 = first(trace, lambda e, best: best <= 1.01 * f_star)
        tr = reached(formed, stack, targets, C, f_star)
        tg, sg = first(trace, lambda e, best: e["gap"] <= 1e-2)
        row = {"data": name, "C": C, "seed": seed, "labels": T, "n_train": stack.n_rows, "contender": label,
               "time_to_1pct": t1, "solves_to_1pct": s1, "time_reached_1pct": tr,
               "time_to_gap_1e-2": tg, "solves_to_gap_1e-2": sg,
               "fit_time": fitted.fit_time, "objective": float(res.objective), "f_star": f_star,
               "rel_objective": float(res.objective / f_star - 1), "gap": float(res.dual_gap),
               "n_iter": int(res.n_iter), "n_selected": int(np.count_nonzero(res.weights > 1e-6)),
               **ranking_scores(Yte, fitted.decision_function(cross))}
        rows.append(row)
        print(f"{name:9s} C={C:<5g} {label:22s} to 1% certified: {t1:7.2f}s ({s1:4d} SVMs) reached: {tr:7.2f}s  "
              f"to gap 1e-2: {tg:7.2f}s ({sg:4d} SVMs)  fit {fitted.fit_time:7.2f}s  F/F*-1 "
              f"{row['rel_objective']:.1e} gap {row['gap']:.1e}  AUC {row['auc']:.4f}  RL {row['ranking_loss']:.4f}",
              flush=True)
    base = {r["contender"]: r for r in rows}
    if "sa" in base:
        sa = base["sa"]
        for r in rows:
            if r["contender"].startswith(("sum/", "sa@")):
                print(f"#   {name} C={C:g}: {r['contender']} / sa time to 1 %: certified "
                      f"{r['time_to_1pct'] / sa['time_to_1pct']:.2f}x, reached "
                      f"{r['time_reached_1pct'] / sa['time_reached_1pct']:.2f}x; to gap 1e-2: "
                      f"{r['time_to_gap_1e-2'] / sa['time_to_gap_1e-2']:.2f}x", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="*", default=["yeast", "emotions"])
    ap.add_argument("--synthetic", nargs="+", type=int, default=[],
                    help="also run synthetic sets with these numbers of labels (600 samples, 20 features)")
    ap.add_argument("--contenders", nargs="+", choices=[c[0] for c in CONTENDERS],
                    help="run only these (default: all)")
    ap.add_argument("--C", nargs="+", type=float, default=[1.0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tol", type=float, default=1e-3, help="stopping gap of the timed runs")
    ap.add_argument("--max-iter", type=int, default=40,
                    help="outer iterations (SA: certified rounds) of the timed runs")
    ap.add_argument("--data", type=Path, default=DATA, help="folder of the CSV files (default ../shared/data)")
    ap.add_argument("--inner-tol", type=float, default=1e-3,
                    help="the SVM solves' starting tolerance in the timed runs (the outer loop tightens it)")
    ap.add_argument("--baseline", metavar="REV",
                    help="also run the ml_mkl_sa solver as at this git revision (contender sa@REV)")
    ap.add_argument("--sa-param", nargs="+", default=[], metavar="NAME=VALUE",
                    help="parameters of the 'sa' contender's solver (a Python literal each), e.g. batch=2")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    print(f"# {platform.platform()}, {platform.processor() or platform.machine()}, python {platform.python_version()}")
    sa_params = {k: ast.literal_eval(v) for k, v in (p.split("=", 1) for p in args.sa_param)}
    names = args.datasets + [f"synthetic{T}" for T in args.synthetic]
    rows = [r for name in names for C in args.C
            for r in bench(name, C, args.seed, args.tol, args.data, args.max_iter, args.contenders, args.baseline,
                           args.inner_tol, sa_params)]
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
