"""nmp.arch"""
