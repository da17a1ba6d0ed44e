"""ReCross (Liu et al., ISCA'23).

Its claims, model and golden fixture, in one folder (see :mod:`nmp.papers`).
"""
