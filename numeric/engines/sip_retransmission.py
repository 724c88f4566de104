"""The old path of the ``sip-retransmission`` engine, kept for the model's ``Ref`` to it (the engine is the package
:mod:`qderive.numeric.engines.sip`; import from there)."""

from .sip.engine import SipEngine

__all__ = ["SipEngine"]
