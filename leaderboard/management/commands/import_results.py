"""The old name of import_runner_results, kept working for scripts that use it."""

from leaderboard.management.commands.import_runner_results import Command as ImportRunnerResults


class Command(ImportRunnerResults):
    help = f"Alias of import_runner_results. {ImportRunnerResults.help}"
