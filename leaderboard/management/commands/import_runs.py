"""The old name of import_seed_csv, kept working for scripts that use it."""

from leaderboard.management.commands.import_seed_csv import Command as ImportSeedCsv


class Command(ImportSeedCsv):
    help = f"Alias of import_seed_csv. {ImportSeedCsv.help}"
