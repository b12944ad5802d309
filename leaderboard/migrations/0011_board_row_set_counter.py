"""The board's second counter says what it counts: the row set (which rows are on the board and
in the ranking), not a "layout"."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("leaderboard", "0010_kept_off_index_test_weights")]

    operations = [
        migrations.RenameField(model_name="boardversion", old_name="layout", new_name="row_set")
    ]
