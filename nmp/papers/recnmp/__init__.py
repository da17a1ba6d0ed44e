"""RecNMP (Ke et al., ISCA'20).

Its claims, model and golden fixture, in one folder (see :mod:`nmp.papers`).
"""
