"""The protocols that ship with rdzv-sim, registered like anyone else's."""
from .c10d.protocol import C10dProtocol, C10dSettings
from .hrw import HrwProtocol, HrwSettings
from .quorum.protocol import QuorumProtocol, QuorumSettings
from .registry import register_protocol
from .static import StaticProtocol, StaticSettings

register_protocol("static", StaticProtocol, StaticSettings)
register_protocol("hrw", HrwProtocol, HrwSettings)
register_protocol("c10d", C10dProtocol, C10dSettings)
register_protocol("quorum", QuorumProtocol, QuorumSettings)
