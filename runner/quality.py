"""The quality protocol's tasks under the module name runner.evidence still imports; the protocol
and its tasks live in runner.protocols.quality. Delete once the evidence checks ask the protocol
(``QualityProtocol.check_evidence``)."""

from runner.protocols.quality import score, tasks

__all__ = ["score", "tasks"]
