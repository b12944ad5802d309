"""The errors the services raise: each carries field-keyed messages for forms and the API."""

from __future__ import annotations


class ServiceError(Exception):
    """A request the service refuses; `errors` maps field names to messages for forms and the API."""

    def __init__(self, errors: dict[str, list[str]] | str) -> None:
        self.errors = {"non_field_errors": [errors]} if isinstance(errors, str) else errors
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in self.errors.items()))


class SubmissionError(ServiceError):
    """The submitted config is invalid; nothing was created."""


class RegistrationError(ServiceError):
    """A model file cannot be registered."""


class CsvImportError(ServiceError):
    """An uploaded results file cannot be imported; nothing was created."""


class DuplicateUploadError(ServiceError):
    """The same result file was already uploaded for this hardware; nothing was created."""
