"""nmp.memory"""
