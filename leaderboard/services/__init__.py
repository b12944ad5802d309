"""Every write Specboard makes: typed functions with keyword-only arguments, by sub-domain.

Views, forms, serializers, admin actions, commands and Celery tasks call these and nothing else;
this package's names are the public face (`services.submit_config`), the modules say who owns what:

- `registry`: hardware kinds, model files, engine builds.
- `configs`: Config rows, measured and self-reported.
- `submissions`: a raw config validated and queued as a job (form and API alike).
- `jobs`: claims, progress, failures, cancels, and the sweeps that keep the broker honest.
- `hosts`: GPU hosts, their keys, and what a host may send back.
- `limits`: whether a user's allowance covers a new submission (submissions an hour, tokens a
  day); the allowance itself is a read, `leaderboard.allowances` (`selectors.allowance`).
- `results`: one road for every runner result (worker, result file, upload) into Run rows.
- `board`: the maintained leaderboard rows, their verdicts, reranking and the board's version.
- `pairing`: a row's baseline batch and its speedup, as the board stores them.
- `hub_models`: Hugging Face registrations and the users' model requests.
- `community_imports`: the seed kit's results CSV.
- `errors`: the field-keyed errors every service raises (one exception handler maps them).

No module here imports `leaderboard.tasks`: tasks are sent by name through
`leaderboard.messaging.dispatch`.
"""

from leaderboard.models import SELF_REPORTED_RELEASE, SELF_REPORTED_UPLOAD_SOURCE
from leaderboard.services.board import (
    raise_board_version,
    refresh_leaderboard_entry,
    refresh_verdicts,
    summarize_every_ranking,
)
from leaderboard.services.community_imports import (
    SEED_CSV_COLUMNS,
    ImportReport,
    import_leaderboard_csv,
)
from leaderboard.services.errors import (
    CsvImportError,
    DuplicateUploadError,
    RegistrationError,
    ServiceError,
    SubmissionError,
)
from leaderboard.services.hosts import (
    HostMessage,
    accept_host_message,
    ensure_gpu_host,
    record_host_message,
    register_gpu_host,
    revoke_gpu_host,
)
from leaderboard.services.hub_models import (
    ModelRequestError,
    approve_model_request,
    refuse_model_request,
    register_hub_model,
    request_model,
)
from leaderboard.services.jobs import (
    cancel_job,
    claim_job,
    fail_stuck_jobs,
    job_payload,
    record_failure,
    record_progress,
    requeue_lost_jobs,
    requeue_orphaned_jobs,
)
from leaderboard.services.limits import LimitReached, check_allowance
from leaderboard.services.registry import (
    advertised_gpu_problems,
    gpus_serve_kind_problem,
    register_hardware,
    register_hardware_from_gpus,
    register_model,
    retire_engine_build,
)
from leaderboard.services.results import (
    import_runner_result,
    record_result,
    record_self_reported_result,
)
from leaderboard.services.submissions import (
    ValidatedConfig,
    queue_submission,
    submit_config,
    validate_submission,
)
from runner.provenance import normalise_gpu_name

__all__ = [
    "refresh_verdicts",
    "SEED_CSV_COLUMNS",
    "SELF_REPORTED_RELEASE",
    "SELF_REPORTED_UPLOAD_SOURCE",
    "CsvImportError",
    "DuplicateUploadError",
    "ImportReport",
    "LimitReached",
    "ModelRequestError",
    "RegistrationError",
    "ServiceError",
    "ValidatedConfig",
    "SubmissionError",
    "HostMessage",
    "accept_host_message",
    "approve_model_request",
    "cancel_job",
    "check_allowance",
    "ensure_gpu_host",
    "claim_job",
    "fail_stuck_jobs",
    "import_leaderboard_csv",
    "import_runner_result",
    "job_payload",
    "normalise_gpu_name",
    "raise_board_version",
    "record_failure",
    "record_host_message",
    "record_progress",
    "record_result",
    "queue_submission",
    "record_self_reported_result",
    "refresh_leaderboard_entry",
    "summarize_every_ranking",
    "register_gpu_host",
    "register_hardware",
    "register_hardware_from_gpus",
    "advertised_gpu_problems",
    "gpus_serve_kind_problem",
    "register_hub_model",
    "register_model",
    "refuse_model_request",
    "request_model",
    "requeue_lost_jobs",
    "requeue_orphaned_jobs",
    "retire_engine_build",
    "revoke_gpu_host",
    "submit_config",
    "validate_submission",
]
