"""Held-out metrics of a CTR model: AUC, logloss, accuracy."""

from __future__ import annotations

from typing import Any

import numpy as np


def rankdata(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n with ties given their average rank (scipy.stats.rankdata's default; done
    here in numpy because importing scipy.stats costs seconds)."""
    order = np.argsort(x, kind="stable")
    xs = x[order]
    first = np.r_[True, xs[1:] != xs[:-1]]
    group = np.cumsum(first) - 1
    starts = np.flatnonzero(first)
    ends = np.r_[starts[1:], len(xs)]
    avg = (starts + ends + 1) / 2.0  # mean of ranks starts+1 .. ends
    ranks = np.empty(len(x), dtype=np.float64)
    ranks[order] = avg[group]
    return ranks


def auc(label: np.ndarray, score: np.ndarray) -> float:
    """Area under the ROC curve by the rank-sum (Mann-Whitney) formula, ties averaged."""
    label = np.asarray(label, dtype=bool)
    pos = int(label.sum())
    neg = label.size - pos
    if pos == 0 or neg == 0:
        return float("nan")
    ranks = rankdata(np.asarray(score, dtype=np.float64))
    return float((ranks[label].sum() - pos * (pos + 1) / 2.0) / (pos * neg))


def auc_se(a: float, pos: int, neg: int) -> float:
    """Standard error of an AUC from ``pos`` positives and ``neg`` negatives (Hanley & McNeil,
    Radiology 143:29-36, 1982, eq. 2; the exponential-score approximation of its Q1, Q2)."""
    q1 = a / (2.0 - a)
    q2 = 2.0 * a * a / (1.0 + a)
    var = (a * (1 - a) + (pos - 1) * (q1 - a * a) + (neg - 1) * (q2 - a * a)) / (pos * neg)
    return float(np.sqrt(max(var, 0.0)))


def logloss(label: np.ndarray, prob: np.ndarray, eps: float = 1e-7) -> float:
    p = np.clip(np.asarray(prob, dtype=np.float64), eps, 1.0 - eps)
    y = np.asarray(label, dtype=np.float64)
    return float(-np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p)))


def accuracy(label: np.ndarray, prob: np.ndarray) -> float:
    return float(np.mean((np.asarray(prob) >= 0.5) == (np.asarray(label) >= 0.5)))


def all_metrics(label: np.ndarray, prob: np.ndarray) -> dict[str, Any]:
    """AUC (None when the labels are all one class: it is undefined), logloss, accuracy."""
    a = auc(label, prob)
    pos = int(np.asarray(label, dtype=bool).sum())
    n = int(np.asarray(label).size)
    defined = not np.isnan(a)
    return {
        "auc": a if defined else None,
        "auc_se": auc_se(a, pos, n - pos) if defined else None,
        "samples": n,
        "logloss": logloss(label, prob),
        "accuracy": accuracy(label, prob),
    }
