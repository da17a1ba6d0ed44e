"""The GPU embedding-inference paper (Jain et al., MICRO'24).

Its claims, model and golden fixture, in one folder (see :mod:`nmp.papers`).
"""
