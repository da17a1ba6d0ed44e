"""PyRTL designs of the memory-side parity unit, their Verilog export and characterization.

- :mod:`nmp.rtl.parity`: builders (``parity_core``, ``forward_select``, ...) and
  :class:`ParityUnitConfig`; ``build_unit`` (with its SRAM) and ``build_datapath`` (without).
- :mod:`nmp.rtl.input_modes`: the unit's registered front ends (``delta``; ``old_new``
  through ``delta_unit``): its data ports, their stimulus, the PyRTL in front of the core.
- :mod:`nmp.rtl.gf`: GF(2^8) byte-lane multipliers.
- :mod:`nmp.rtl.stream` / :mod:`nmp.rtl.sim`: seeded update streams, their :mod:`nmp.coding`
  reference, and the PyRTL simulation driver.
- :mod:`nmp.rtl.verilog`: ``nmp rtl export``; :mod:`nmp.rtl.synth`: ``nmp rtl report`` and
  :func:`parity_unit_figures` (area and clock for the architecture models).

Import the submodules directly; this package imports nothing heavy.
"""
