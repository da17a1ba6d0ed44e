"""nmp.workload"""
