"""The output-length check under the module name runner.evidence still imports; the protocol and
its figures live in runner.protocols.output_length. Delete once the evidence checks ask the
protocol (``OutputLengthProtocol.check_evidence``)."""

from runner.protocols.output_length import output_length_problem

__all__ = ["output_length_problem"]
