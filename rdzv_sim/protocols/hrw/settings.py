"""hrw's settings (seconds)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, NonNegativeFloat, PositiveFloat

from ..ranking import RankOrder
from ..settings import ProtocolSettings
from .failover import SUCCESSORS


class HrwSettings(ProtocolSettings):
    """Settings of the `hrw` protocol (seconds)."""
    name: Literal["hrw"] = "hrw"
    last_call_timeout: NonNegativeFloat = Field(1.0, description="after min_nodes join, wait this long for more")
    confirm_timeout: PositiveFloat = Field(30.0, description="members must all confirm within this")
    close_grace: NonNegativeFloat = Field(2.0, description="a stand-in closes if the designated closer is silent this long")
    hole_grace: NonNegativeFloat = Field(1.0, description="how long the closer waits for a slot's descriptor")
    probe_interval: PositiveFloat = Field(30.0, description="a waiter checks a running round's members this often")
    probe_timeout: PositiveFloat = Field(15.0, description="a member that has not answered by then is gone, and the "
                                         "round ends (> worker start)")
    rank_order: RankOrder = Field("hrw", description="ranks by HRW score, by topology key, or kept across rounds (stable)")
    store_failover: bool = Field(False, description="a lost TCPStore is replaced by one on a member elected by HRW; "
                                 "every round then needs a majority of the last one")
    failover_timeout: PositiveFloat = Field(10.0, description="how long a failover waits for its successor's store")
    close_on_shutdown: bool = Field(True, description="an agent that exits (out of restarts, timed out, done) "
                                    "closes the rendezvous for every agent, as torch's handlers do; false: "
                                    "the others re-form without it")

    @property
    def fails_over(self) -> bool:
        return self.store_failover

    def round_time(self) -> float:
        failover = SUCCESSORS * self.failover_timeout if self.store_failover else 0.0
        return (self.last_call_timeout + self.close_grace + self.hole_grace + self.confirm_timeout
                + self.probe_interval + self.probe_timeout + failover)

    def close_due(self, joins: list[float]) -> float | None:
        """The max_nodes-th joiner closes at once; else the min_nodes-th after last call."""
        if len(joins) >= self.max_nodes:
            return joins[self.max_nodes - 1]
        return joins[self.min_nodes - 1] + self.last_call_timeout if len(joins) >= self.min_nodes else None
