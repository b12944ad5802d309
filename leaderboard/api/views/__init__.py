"""The REST API's views under /api/v1/, one module per resource; reads are public.

`catalogue` holds model files, hardware, llama.cpp builds and configs; `board` the leaderboard,
its exports and compare; `runs` the measured runs and their per-request exports; `jobs` a job's
progress and cancelling it; `hosts` the GPU hosts serving each hardware kind; `submissions`
what users send in (configs, CSV imports, result files); `models` the users' Hugging Face
model requests; `drafts` which draft for a target; `protocols` the concurrency protocol's
figures; `root` the API's root with every collection's link. Errors, content negotiation,
permissions and throttles live beside this package in `leaderboard.api`. Every view is
re-exported here, so `views.Compare` names the same class.
"""

from leaderboard.api.views.board import (
    Compare,
    LeaderboardCsv,
    LeaderboardJson,
    LeaderboardList,
)
from leaderboard.api.views.catalogue import (
    BuildList,
    BuildRetire,
    ConfigDetail,
    ConfigList,
    HardwareList,
    ModelListCreate,
)
from leaderboard.api.views.hosts import HostList
from leaderboard.api.views.jobs import JobCancel, JobDetail
from leaderboard.api.views.runs import RunDetail, RunList, RunRequestsCsv, RunRequestsJson
from leaderboard.api.views.submissions import ImportCreate, SubmissionListCreate, UploadCreate

__all__ = [
    "BuildList",
    "BuildRetire",
    "Compare",
    "ConfigDetail",
    "ConfigList",
    "HardwareList",
    "HostList",
    "ImportCreate",
    "JobCancel",
    "JobDetail",
    "LeaderboardCsv",
    "LeaderboardJson",
    "LeaderboardList",
    "ModelListCreate",
    "RunDetail",
    "RunList",
    "RunRequestsCsv",
    "RunRequestsJson",
    "SubmissionListCreate",
    "UploadCreate",
]
