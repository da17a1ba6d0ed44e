"""nmp.evaluate"""
