"""Random failures are a Poisson process of the whole system with mean ``mtbf_steps`` between
failures (nmp/train/failures.py, docs/training.md), checked by its statistics over many seeds.

Tolerances: the seeds are fixed, so each test is deterministic; the bounds are 4.5 standard
deviations of the estimate under the stated process (a false alarm for a re-seeded or
re-implemented generator about once in 150 000). A 10 % error in the MTBF moves the failure
count by 13 of them and the mean first failure by 4.5; a 3x error, by 95 and 89.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from nmp.train.failures import random_failures

MTBF = 1000.0
NODES = 5


def test_the_failure_count_over_many_seeds_is_steps_over_the_mtbf():
    # 200 runs of 100 000 steps: the total count is Poisson with mean 200 x 100 = 20 000 and
    # standard deviation sqrt(20 000) = 141. Draws in one step on one node merge into one
    # failure: about 1 in 1000 gaps is under a step and 1 in 5 of those hits the same node, so
    # ~4 of the 20 000 are lost (0.03 sd).
    seeds, steps = 200, 100_000
    failures = [random_failures(steps, NODES, MTBF, seed=s) for s in range(seeds)]
    total = sum(len(f) for f in failures)
    expected = seeds * steps / MTBF
    assert abs(total - expected) <= 4.5 * math.sqrt(expected)  # +-636: the MTBF within 3.2 %
    # The estimated MTBF (steps observed / failures seen):
    assert seeds * steps / total == pytest.approx(MTBF, rel=0.04)
    # ... each on a uniformly chosen node: a node's count is Binomial(total, 1/5).
    nodes = np.bincount([f.node for run in failures for f in run], minlength=NODES)
    sd = math.sqrt(total * (1 / NODES) * (1 - 1 / NODES))
    assert np.all(np.abs(nodes - total / NODES) <= 4.5 * sd)


def test_the_time_to_the_first_failure_is_exponential_with_mean_the_mtbf():
    # The first failure of each of 2000 seeds: Exp(MTBF) truncated to its step, mean
    # MTBF - 1/2 (to within 1e-4) and standard deviation MTBF, so the sample mean has sd
    # MTBF / sqrt(2000) = 22.4 steps. A run of 20 MTBFs has a failure except with p = e^-20.
    seeds = 2000
    first = np.array(
        [random_failures(int(20 * MTBF), NODES, MTBF, seed=s)[0].step for s in range(seeds)]
    )
    sd_mean = MTBF / math.sqrt(seeds)
    assert abs(first.mean() - (MTBF - 0.5)) <= 4.5 * sd_mean  # +-101 steps
    # Exponential, not just the right mean: P(T > MTBF) = 1/e (binomial sd over the seeds).
    p = math.exp(-1.0)
    assert abs((first >= MTBF).mean() - p) <= 4.5 * math.sqrt(p * (1 - p) / seeds)
