"""RecShard (Sethi et al., ASPLOS'22).

Its claims, model and golden fixture, in one folder (see :mod:`nmp.papers`).
"""
