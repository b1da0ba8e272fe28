"""Benchmark ITML (``multikernel.ITML``) against metric-learn's ITML in one run, and ITML+ against ITML.

Measurements, single-threaded on both sides (BLAS limited to one thread):

1. whole fits on the same pairs with the same parameters (10,000 pairs from 10 classes, d in {50, 200},
   gamma = 1, tol = 1e-3, max_iter = 100 sweeps: with the 3rd/97th-percentile targets these problems need
   more than 1000 sweeps to reach tol, so both stop at the cap after the same 100 sweeps): wall and CPU time,
   time per projection, the relative Frobenius difference of the learnt matrices; the rounds of the two
   contenders are interleaved;
2. the agreement at a tight tolerance (tol = 1e-9, gamma = 0.1, which converges) on 2,000 pairs, d = 20;
3. the growth with the number of constraints (1e3, 1e4, 1e5 pairs, d = 50): time of 10 sweeps (whole fits,
   so the fixed costs of a fit are included on both sides), per projection;
4. the floor at d = 200: a projection reads and writes the upper triangle of M once (the previous
   projection's M += c u u' fused with this one's u = M v): one in-cache copy of the triangle, timed with
   numpy ``copyto`` (repeated; its call overhead included, so the floor is if anything overestimated);
5. ITML+ (h = g = 50) against ITML (h = 50) on the same pairs: time per projection, expected ratio about 2
   (O(h^2 + g^2) against O(h^2)).

metric-learn 0.7.0 passes ``force_all_finite`` to scikit-learn's ``check_X_y``/``check_array``, a keyword
scikit-learn 1.8 removed; this script (only) renames it to ``ensure_all_finite`` before calling them. Both
sweep similar pairs first, then dissimilar ones (metric-learn's order; ours is the given order), and both get
the same explicit bounds, so they make the same projections in the same order.

Usage::

    python benchmarks/bench_itml.py              # full run (metric-learn's fits take ~1 min)
    python benchmarks/bench_itml.py --quick      # smaller sizes, one round
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import time
import warnings

import numpy as np
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from multikernel import ITML, ITMLPlus
from multikernel.metric import draw_pairs


def _adapt_metric_learn():
    """Import metric-learn's ITML, renaming its removed scikit-learn keyword when needed (benchmark only)."""
    import metric_learn
    import metric_learn._util as util
    from sklearn.utils import validation

    try:
        validation.check_array(np.zeros((2, 2)), force_all_finite=True)
    except TypeError:

        def rename(fn):
            @functools.wraps(fn)
            def wrapper(*args, force_all_finite=None, **kwargs):
                if force_all_finite is not None:
                    kwargs["ensure_all_finite"] = force_all_finite
                return fn(*args, **kwargs)

            return wrapper

        util.check_X_y = rename(util.check_X_y)
        util.check_array = rename(util.check_array)
        print(f"metric-learn {metric_learn.__version__}: force_all_finite renamed to ensure_all_finite "
              "(removed from scikit-learn 1.8) for this benchmark")
    return metric_learn.ITML


def problem(d: int, n_per_kind: int, seed: int = 0, n: int = 2000):
    """Pairs (similar first, then dissimilar) of standardised 10-class data, and the (3, 97) targets."""
    X, y = make_classification(n_samples=n, n_features=d, n_informative=d // 2, n_redundant=0, n_classes=10,
                               n_clusters_per_class=1, random_state=seed)
    X = (X - X.mean(0)) / X.std(0)
    idx, lab = draw_pairs(y, n_per_kind, random_state=seed)
    order = np.argsort(-lab, kind="stable")
    idx, lab = idx[order], lab[order]
    P3 = np.stack([X[idx[:, 0]], X[idx[:, 1]]], axis=1)
    sq = np.einsum("ij,ij->i", X, X)
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, n, 200_000), rng.integers(0, n, 200_000)
    keep = a != b
    D = sq[a[keep]] + sq[b[keep]] - 2 * np.einsum("ij,ij->i", X[a[keep]], X[b[keep]])
    return X, idx, lab, P3, np.percentile(D, [3, 97])


def _timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w, time.process_time() - c, out


def rel(A, B):
    return float(np.linalg.norm(A - B) / np.linalg.norm(B))


def whole_fits(MLITML, dims, n_per_kind, rounds, max_iter):
    rows = []
    for d in dims:
        _, _, lab, P3, bounds = problem(d, n_per_kind)
        ours_t, ml_t = [], []
        for _ in range(rounds):  # interleaved
            ours, ml = ITML(tol=1e-3, max_iter=max_iter), MLITML(tol=1e-3, max_iter=max_iter)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                w, c, _ = _timed(lambda e=ours, P3=P3, lab=lab, b=bounds: e.fit(P3, lab, bounds=b))
            ours_t.append((w, c))
            w, c, _ = _timed(lambda e=ml, P3=P3, lab=lab, b=bounds: e.fit(P3, lab, bounds=b))
            ml_t.append((w, c))
        (ow, oc), (mw, mc) = min(ours_t), min(ml_t)
        sweeps_ml = ml.n_iter_ + 1  # metric-learn stores the index of its last sweep
        m = len(lab)
        rows.append(dict(d=d, pairs=m, ours=ow, ours_cpu=oc, ml=mw, ml_cpu=mc, sweeps=ours.n_iter_, sweeps_ml=sweeps_ml,
                         us_ours=1e6 * ow / (ours.n_iter_ * m), us_ml=1e6 * mw / (sweeps_ml * m),
                         us_ours_cpu=1e6 * oc / (ours.n_iter_ * m), us_ml_cpu=1e6 * mc / (sweeps_ml * m),
                         diff=rel(ours.get_mahalanobis_matrix(), ml.get_mahalanobis_matrix())))
        r = rows[-1]
        print(f"d={d:4d} pairs={m}: ours {ow:7.3f} s (CPU {oc:.3f}), metric-learn {mw:7.3f} s (CPU {mc:.3f}); "
              f"ratio {mw / ow:5.1f}x wall, {mc / oc:5.1f}x CPU; sweeps {r['sweeps']} / {sweeps_ml}; per projection "
              f"{r['us_ours']:.2f} / {r['us_ml']:.2f} us (CPU {r['us_ours_cpu']:.2f} / {r['us_ml_cpu']:.2f}); "
              f"rel. Frobenius diff {r['diff']:.1e}", flush=True)
    return rows


def tight_agreement(MLITML):
    _, _, lab, P3, bounds = problem(20, 1000, seed=1, n=500)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ours = ITML(gamma=0.1, tol=1e-9, max_iter=100_000).fit(P3, lab, bounds=bounds)
    ml = MLITML(gamma=0.1, tol=1e-9, max_iter=100_000).fit(P3, lab, bounds=bounds)
    diff = rel(ours.get_mahalanobis_matrix(), ml.get_mahalanobis_matrix())
    print(f"tight tolerance (d=20, {len(lab)} pairs, tol=1e-9): sweeps {ours.n_iter_} / {ml.n_iter_ + 1}, "
          f"rel. Frobenius diff {diff:.1e}", flush=True)
    return dict(pairs=len(lab), sweeps=ours.n_iter_, sweeps_ml=ml.n_iter_ + 1, diff=diff)


def growth(MLITML, sizes, sweeps):
    rows = []
    for m in sizes:
        _, _, lab, P3, bounds = problem(50, m // 2, n=max(2000, int(np.sqrt(4 * m))))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            ours, theirs = (cls(tol=1e-300, max_iter=sweeps) for cls in (ITML, MLITML))
            ow, oc, _ = _timed(lambda e=ours, P3=P3, lab=lab, b=bounds: e.fit(P3, lab, bounds=b))
            mw, mc, _ = _timed(lambda e=theirs, P3=P3, lab=lab, b=bounds: e.fit(P3, lab, bounds=b))
        rows.append(dict(pairs=len(lab), ours=ow, ml=mw, us_ours=1e6 * ow / (sweeps * len(lab)),
                         us_ml=1e6 * mw / (sweeps * len(lab)), ours_cpu=oc, ml_cpu=mc))
        print(f"{len(lab):7d} pairs, {sweeps} sweeps, d=50: ours {ow:.3f} s (CPU {oc:.3f}; {rows[-1]['us_ours']:.2f} "
              f"us/projection), metric-learn {mw:.3f} s (CPU {mc:.3f}; {rows[-1]['us_ml']:.2f} us/projection), "
              f"ratio {mw / ow:.1f}x wall, {mc / oc:.1f}x CPU", flush=True)
    return rows


def floor(d, us_per_projection):
    tri = d * (d + 1) // 2
    src, dst = np.random.default_rng(0).normal(size=tri), np.empty(tri)
    reps = 20000
    np.copyto(dst, src)
    t = time.process_time()  # CPU time, as the projection's: the machine may be shared
    for _ in range(reps):
        np.copyto(dst, src)
    copy_us = 1e6 * (time.process_time() - t) / reps
    floor_us = copy_us
    gbs = 2 * 8 * tri / (us_per_projection * 1e3)
    print(f"floor at d={d}: in-cache copy of the triangle ({8 * tri / 1024:.0f} KiB) {copy_us:.2f} us (numpy, "
          f"includes its call overhead; CPU time); measured projection (CPU time) "
          f"{us_per_projection:.2f} us = {us_per_projection / floor_us:.1f}x the floor ({gbs:.0f} GB/s moved)",
          flush=True)
    return dict(d=d, copy_us=copy_us, floor_us=floor_us, us=us_per_projection, gbs=gbs)


def plus_vs_itml(n_per_kind):
    X, idx, lab, P3, bounds = problem(50, n_per_kind)
    Z = X @ np.random.default_rng(2).normal(size=(50, 50)) / np.sqrt(50)
    Z3 = np.stack([Z[idx[:, 0]], Z[idx[:, 1]]], axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        iw, _, _ = _timed(lambda: ITML(tol=1e-300, max_iter=5).fit(P3, lab, bounds=bounds))
        pw, _, _ = _timed(lambda: ITMLPlus(tol=1e-300, max_iter=5).fit(P3, lab, pairs_privileged=Z3, bounds=bounds))
    m = 5 * len(lab)
    print(f"ITML+ (h=g=50) {1e6 * pw / m:.2f} us/projection, ITML (h=50) {1e6 * iw / m:.2f} us/projection, "
          f"ratio {pw / iw:.2f}", flush=True)
    return dict(plus_us=1e6 * pw / m, itml_us=1e6 * iw / m)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, one round")
    ap.add_argument("--sections", default="fits,tight,growth,floor,plus",
                    help="comma-separated subset of fits,tight,growth,floor,plus (floor needs fits)")
    args = ap.parse_args()
    # metric-learn's threshold calibration calls a scikit-learn function deprecated in 1.8
    warnings.filterwarnings("ignore", category=FutureWarning, module="sklearn")
    print(f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"numpy {np.__version__}; load average {os.getloadavg()}")
    MLITML = _adapt_metric_learn()
    with threadpool_limits(1):
        if args.quick:
            fits = whole_fits(MLITML, [50], 1000, 1, 20)
            growth(MLITML, [1000, 10000], 2)
        else:
            sections = set(args.sections.split(","))
            if "fits" in sections:
                fits = whole_fits(MLITML, [50, 200], 5000, 2, 100)
            if "tight" in sections:
                tight_agreement(MLITML)
            if "growth" in sections:
                growth(MLITML, [1000, 10000, 100000], 10)
            if "floor" in sections and "fits" in sections:
                floor(200, next(r["us_ours_cpu"] for r in fits if r["d"] == 200))
            if "plus" in sections:
                plus_vs_itml(2500)
    print(f"load average at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
