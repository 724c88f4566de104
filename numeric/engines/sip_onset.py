"""The old path of ``qderive size sip-retransmission``, kept for the model's ``Ref`` to it (the collapse onset is
:mod:`qderive.numeric.engines.sip.onset`; import from there)."""

from .sip.onset import size

__all__ = ["size"]
