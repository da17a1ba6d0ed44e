"""Held-out metrics of a CTR model: AUC, logloss, accuracy."""

from __future__ import annotations

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


def logloss(label: np.ndarray, prob: np.ndarray, eps: float = 1e-7) -> float:
    p = np.clip(np.asarray(prob, dtype=np.float64), eps, 1.0 - eps)
    y = np.asarray(label, dtype=np.float64)
    return float(-np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p)))


def accuracy(label: np.ndarray, prob: np.ndarray) -> float:
    return float(np.mean((np.asarray(prob) >= 0.5) == (np.asarray(label) >= 0.5)))


def all_metrics(label: np.ndarray, prob: np.ndarray) -> dict[str, float]:
    return {
        "auc": auc(label, prob),
        "logloss": logloss(label, prob),
        "accuracy": accuracy(label, prob),
    }
