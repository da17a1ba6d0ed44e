"""SC'24's compressed embedding all-to-all.

Its claims, model and golden fixture, in one folder (see :mod:`nmp.papers`).
"""
