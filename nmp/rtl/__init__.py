"""nmp.rtl"""
