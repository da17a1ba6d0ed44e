"""nmp.report"""
