"""nmp.coding"""
