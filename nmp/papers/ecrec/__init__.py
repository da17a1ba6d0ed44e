"""ECRM/ECRec (Liu, Kosaian, Rashmi, 2021).

Its claims, model and golden fixture, in one folder (see :mod:`nmp.papers`).
"""
