"""The API's serializers, one module per resource as in `leaderboard.api.views`: read-only ones
for output, explicit input serializers for writes.

- `board`: the leaderboard rows with their verdicts, evidence and definitions, and their query.
- `compare`: two to four configs side by side and the differences to the first.
- `configs`: a config, its best run's energy and roofline, and its detail's protocol figures.
- `runs`: a run, its request records, energy, roofline and acceptance spread, and their query.
- `jobs`: a job's status, progress, cost and place in the queue.
- `submissions`: a submitted config, a seed-kit CSV import, a result upload, the allowance.
- `catalogue`: model files and registering them, hardware kinds, llama.cpp builds.
- `models`: model requests (a user's ask for a Hugging Face model).
- `protocols`: the concurrency lines and levels, the categories' figures.
- `hosts`: the GPU hosts serving each hardware kind and its queue.
- `drafts`: which draft for a target, per ranking.
- `root`: the API root, every collection's link.

Every serializer is re-exported here, so views write `serializers.ConfigSerializer`.
"""

from leaderboard.api.serializers.board import (
    DepthFigureSerializer,
    LeaderboardEntrySerializer,
    LeaderboardQuerySerializer,
)
from leaderboard.api.serializers.catalogue import (
    EngineBuildSerializer,
    HardwareSerializer,
    HubModelRegistrationSerializer,
    ModelFileSerializer,
    ModelRegistrationSerializer,
    RetireBuildInputSerializer,
    RetireBuildReportSerializer,
)
from leaderboard.api.serializers.compare import (
    CompareColumnSerializer,
    CompareQuerySerializer,
    CompareSerializer,
    DifferenceSerializer,
)
from leaderboard.api.serializers.configs import (
    ConfigDetailSerializer,
    ConfigEnergyField,
    ConfigRooflineField,
    ConfigSerializer,
)
from leaderboard.api.serializers.drafts import (
    DraftGroupSerializer,
    DraftSerializer,
    DraftsQuerySerializer,
    DraftsSerializer,
)
from leaderboard.api.serializers.hosts import (
    HardwareHostsSerializer,
    HostBoardSerializer,
    HostJobSerializer,
    HostSerializer,
)
from leaderboard.api.serializers.jobs import (
    JobSerializer,
    TokenBudgetSerializer,
)
from leaderboard.api.serializers.models import (
    ModelRequestInputSerializer,
    ModelRequestSerializer,
)
from leaderboard.api.serializers.protocols import (
    CategoryFigureSerializer,
    ConcurrencyLevelSerializer,
    ConcurrencyLineSerializer,
    ConcurrencyQuerySerializer,
    ConcurrencySerializer,
)
from leaderboard.api.serializers.root import ApiRootSerializer, ResourceSerializer
from leaderboard.api.serializers.runs import (
    AcceptanceBinSerializer,
    AcceptanceSpreadSerializer,
    EnergySerializer,
    RequestRecordSerializer,
    RooflineLevelSerializer,
    RooflineSerializer,
    RunAcceptanceSpreadField,
    RunDetailSerializer,
    RunEnergyField,
    RunQuerySerializer,
    RunRooflineField,
    RunSerializer,
    SpreadSerializer,
    WholeObjectField,
)
from leaderboard.api.serializers.submissions import (
    AllowanceSerializer,
    ImportInputSerializer,
    ImportReportSerializer,
    RunnerConfigField,
    SubmissionInputSerializer,
    UploadInputSerializer,
    UploadReportSerializer,
)

__all__ = [
    "AcceptanceBinSerializer",
    "AcceptanceSpreadSerializer",
    "AllowanceSerializer",
    "ApiRootSerializer",
    "CategoryFigureSerializer",
    "CompareColumnSerializer",
    "CompareQuerySerializer",
    "CompareSerializer",
    "ConcurrencyLevelSerializer",
    "ConcurrencyLineSerializer",
    "ConcurrencyQuerySerializer",
    "ConcurrencySerializer",
    "ConfigDetailSerializer",
    "ConfigEnergyField",
    "ConfigRooflineField",
    "ConfigSerializer",
    "DepthFigureSerializer",
    "DifferenceSerializer",
    "DraftGroupSerializer",
    "DraftSerializer",
    "DraftsQuerySerializer",
    "DraftsSerializer",
    "EnergySerializer",
    "EngineBuildSerializer",
    "HardwareHostsSerializer",
    "HardwareSerializer",
    "HostBoardSerializer",
    "HostJobSerializer",
    "HostSerializer",
    "HubModelRegistrationSerializer",
    "ImportInputSerializer",
    "ImportReportSerializer",
    "JobSerializer",
    "LeaderboardEntrySerializer",
    "LeaderboardQuerySerializer",
    "ModelFileSerializer",
    "ModelRegistrationSerializer",
    "ModelRequestInputSerializer",
    "ModelRequestSerializer",
    "RequestRecordSerializer",
    "ResourceSerializer",
    "RetireBuildInputSerializer",
    "RetireBuildReportSerializer",
    "RooflineLevelSerializer",
    "RooflineSerializer",
    "RunAcceptanceSpreadField",
    "RunDetailSerializer",
    "RunEnergyField",
    "RunQuerySerializer",
    "RunRooflineField",
    "RunSerializer",
    "RunnerConfigField",
    "SpreadSerializer",
    "SubmissionInputSerializer",
    "TokenBudgetSerializer",
    "UploadInputSerializer",
    "UploadReportSerializer",
    "WholeObjectField",
]
