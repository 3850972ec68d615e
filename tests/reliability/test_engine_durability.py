"""The engine durability probe's bookkeeping: which acknowledged writes count as lost."""

from __future__ import annotations

from reliability.engine_durability import Round


def test_lost_writes_are_acknowledged_ones_the_table_disagrees_with() -> None:
    state = Round(stopped_at=10.0)
    state.acked_puts.update({"kept": 1.0, "dropped": 9.998, "deleted": 2.0, "tried": 3.0})
    state.acked_deletes.update({"deleted": 4.0})
    state.tried_deletes.update({"deleted", "tried"})  # "tried": sent, never acknowledged
    state.kind.update(
        {"kept": "plain", "dropped": "transaction", "deleted": "transaction", "tried": "plain"}
    )
    # "dropped" is gone although acknowledged; "deleted" is back although its delete was;
    # "tried" may be gone or not, since its delete may have landed unacknowledged.
    lost = state.lost(present={"kept", "deleted"})
    assert lost == [
        {"write": "transaction put", "key": "dropped", "acknowledgedMsBeforeStop": 2.0},
        {"write": "transaction delete", "key": "deleted", "acknowledgedMsBeforeStop": 6000.0},
    ]
    assert state.lost(present={"kept", "dropped", "tried"}) == []
