"""Scratch (a demo paper: adding a paper touches its folder and PAPERS.md only).

Its claims, model and golden fixture, in one folder (see :mod:`nmp.papers`).
"""
