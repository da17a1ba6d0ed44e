"""nmp.train"""
