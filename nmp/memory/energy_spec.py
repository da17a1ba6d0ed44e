"""A memory preset's energy model: IDD currents and VDD per device, the off-chip I/O energy, and
DRAMPower's bank-wise factor (:class:`Energy`), with the check that every command's energy
above the background it includes is >= 0 (:func:`check_energy_terms`). :mod:`nmp.memory.stats`
turns them into pJ; :mod:`nmp.memory.spec` holds them in a :class:`~nmp.memory.spec.MemorySpec`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from nmp.config import KeyedValueError, require_positive


@dataclass(frozen=True)
class Energy:
    """IDD currents (mA per device) and VDD for the DRAMsim3-style energy formulas of PAPERS.md;
    ``devices`` scales a device's current to one rank / pseudo channel; ``io_pj_per_bit`` is the
    off-chip I/O energy, reported separately.

    ``bank_wise_rho`` is DRAMPower 6's bank-wise power factor (``bankwisespec.factRho``, its
    DDR5 model, ``core_calculation_DDR5.cpp``): the share of IDD3N - IDD2N a rank draws as soon
    as one bank is open; the rest grows with the banks open, 1/B of it per bank. 1 (DRAMPower's
    default) is DRAMsim3's model, the active background the whole time a bank is open; below 1
    the background follows each bank's open cycles (the engines count them) and a one-bank
    activation includes less of it (:meth:`background_currents`).

    ``refresh_background`` is what the background is during an all-bank refresh's tRFC:
    ``"precharged"`` (DRAMsim3's accounting, the default: the rank's banks are closed, IDD2N,
    and the refresh adds IDD5B - IDD3N, so a refresh draws IDD5B - IDD3N + IDD2N in all) or
    ``"active"`` (DRAMPower's: every bank counted active for tRFC, IDD3N, so a refresh draws
    IDD5B in all, which is how a datasheet defines IDD5B: the current with a REF every tRFC).
    The second adds (IDD3N - IDD2N) x tRFC to the background per refresh."""

    vdd_v: float
    idd0_ma: float
    idd2n_ma: float
    idd3n_ma: float
    idd4r_ma: float
    idd4w_ma: float
    idd5ab_ma: float
    devices: float
    io_pj_per_bit: float
    bank_wise_rho: float = 1.0
    refresh_background: Literal["precharged", "active"] = "precharged"

    def background_currents(self, banks_per_rank: int) -> tuple[float, float]:
        """DRAMPower's background in mA: (I_rho, the current each open bank adds to it). I_rho
        is what a rank with a bank open draws whatever the banks; each of its ``banks_per_rank``
        banks open adds (IDD3N - I_rho) / B, so that all B open draw IDD3N and one open draws
        I_1 = I_rho + that. Written so that rho = 1 gives IDD3N and 0.0 exactly (DRAMsim3's
        figures, bit for bit)."""
        rho = self.bank_wise_rho
        i_rho = rho * self.idd3n_ma + (1.0 - rho) * self.idd2n_ma
        return i_rho, (self.idd3n_ma - i_rho) / banks_per_rank

    def command_excess(self, timing: dict[str, int], banks_per_rank: int) -> dict[str, float]:
        """Each command's current above the background it includes (DRAMsim3's IDD formulas,
        DRAMPower's DDR5 ones at its bank-wise factor; :mod:`nmp.memory.stats` turns them into
        pJ): ``act`` in mA x cycles (IDD0 over tRC less I_1 over tRAS and IDD2N over tRP: an
        ACT and its PRE, IDD0's measurement with one bank cycling; I_1 is IDD3N at rho = 1),
        ``rd``, ``wr``, ``ref`` in mA (IDD4R, IDD4W, IDD5AB less IDD3N, over nBL, nBL and
        nRFC); ``ref_background`` in mA over nRFC, the background a refresh adds to the
        precharged one the engines count then (IDD3N - IDD2N where it is ``"active"``, else
        0.0)."""
        tras = timing.get("nRAS", 0)
        trc = timing.get("nRC", tras + timing.get("nRP", 0))
        i_rho, per_bank = self.background_currents(banks_per_rank)
        i_one = i_rho + per_bank
        return {
            "act": self.idd0_ma * trc - (i_one * tras + self.idd2n_ma * timing["nRP"]),
            "rd": self.idd4r_ma - self.idd3n_ma,
            "wr": self.idd4w_ma - self.idd3n_ma,
            "ref": self.idd5ab_ma - self.idd3n_ma,
            "ref_background": (
                self.idd3n_ma - self.idd2n_ma if self.refresh_background == "active" else 0.0
            ),
        }

    def validate(self) -> None:
        # a negative current or voltage gave a negative energy, silently
        require_positive(self, "vdd_v", "devices")
        for f in dataclasses.fields(self):
            if f.name == "refresh_background":
                if self.refresh_background not in ("precharged", "active"):
                    raise KeyedValueError(
                        f.name, f"must be 'precharged' or 'active', got {self.refresh_background!r}"
                    )
            elif getattr(self, f.name) < 0:
                raise KeyedValueError(f.name, f"must be >= 0, got {getattr(self, f.name)}")
        if not self.bank_wise_rho <= 1.0:
            raise KeyedValueError("bank_wise_rho", f"must lie in [0, 1], got {self.bank_wise_rho}")


def check_energy_terms(e: Energy, timing: dict[str, int], banks_per_rank: int) -> None:
    """Each command's energy above the background it includes is >= 0
    (:meth:`Energy.command_excess`, the terms :mod:`nmp.memory.stats` charges). A set of
    currents from another part, or with the background measured otherwise (a DDR5 datasheet's
    IDD3N, all banks open, exceeds its one-bank IDD0), made those terms negative and the energy
    per lookup smaller, silently."""
    excess = e.command_excess(timing, banks_per_rank)
    if excess["act"] < 0:
        tras = timing.get("nRAS", 0)
        trc = timing.get("nRC", tras + timing.get("nRP", 0))
        background = e.idd0_ma * trc - excess["act"]
        one_bank = "idd3n_ma" if e.bank_wise_rho == 1.0 else "one bank's share (bank_wise_rho)"
        raise KeyedValueError(
            "energy.idd0_ma",
            f"{e.idd0_ma:g} mA over tRC ({trc} cycles) is below the background it includes "
            f"({one_bank} over tRAS and idd2n_ma over tRP: {background / trc:.4g} mA on "
            "average): the activation energy would be negative",
            also=("energy.idd3n_ma", "energy.idd2n_ma", "energy.bank_wise_rho"),
        )
    if excess["ref_background"] < 0:
        raise KeyedValueError(
            "energy.refresh_background",
            f"'active' charges a refresh (idd3n_ma - idd2n_ma) x tRFC, negative here "
            f"(idd3n_ma {e.idd3n_ma:g} < idd2n_ma {e.idd2n_ma:g})",
            also=("energy.idd3n_ma", "energy.idd2n_ma"),
        )
    for command, name in (("rd", "idd4r_ma"), ("wr", "idd4w_ma"), ("ref", "idd5ab_ma")):
        if excess[command] < 0:
            raise KeyedValueError(
                f"energy.{name}",
                f"must be >= idd3n_ma ({e.idd3n_ma:g}), got {getattr(e, name):g}: the "
                "command's energy above the active background would be negative",
            )
