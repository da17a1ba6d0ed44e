"""The code a near-memory unit applies for r parities, chosen by the codes' own attributes
(the hardware cost model named "rs" and "xor")."""

from __future__ import annotations

from nmp.parity_codes import PARITY_CODES, unit_code_for


def test_one_parity_is_the_code_made_for_one_and_more_take_any() -> None:
    one, two, three = unit_code_for(1), unit_code_for(2), unit_code_for(3)
    assert one.in_memory and one.fixed_parities == 1 and one.plain_xor
    assert two is three and two.in_memory and two.fixed_parities is None
    assert (one.name, two.name) == ("xor", "rs")
    # float-sum is made for one parity too, but no unit applies it in memory
    assert not PARITY_CODES.get("float-sum").in_memory and one.name != "float-sum"
