"""nmp.validate: the kit's own checks against references, and every published claim it models.

``nmp validate`` sets three kinds of evidence side by side, each as one row with a verdict:

- the DRAM engine against Ramulator 2.1's measured cycle counts and row hits (one row per
  standard, over the reference cases);
- functional results: every design's gather-reduce against ``torch.nn.EmbeddingBag`` and its
  in-memory parity against a fresh encode, bit for bit;
- published claims (``nmp/papers/<paper>/claims.toml``, data with a citation each) against
  the value the model computes for the same setup. A claim the model disagrees with stays
  visible, with the assumption the difference comes from.

Python::

    from nmp.validate import run_validation
    results = run_validation(quick=True)
    [r.verdict for r in results]
"""

from nmp.validate.claims import Claim, load_claims
from nmp.validate.runner import CheckResult, run_validation

__all__ = ["CheckResult", "Claim", "load_claims", "run_validation"]
