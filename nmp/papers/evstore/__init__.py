"""EVStore (Kurniawan et al., ASPLOS'23).

Its claims, model and golden fixture, in one folder (see :mod:`nmp.papers`).
"""
