"""TRiM (Park et al., MICRO'21).

Its claims, model and golden fixture, in one folder (see :mod:`nmp.papers`).
"""
