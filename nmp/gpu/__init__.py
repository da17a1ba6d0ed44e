"""nmp.gpu"""
