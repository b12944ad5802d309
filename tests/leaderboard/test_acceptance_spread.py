"""How acceptance spreads over a run's requests: a histogram and percentiles computed from the
stored request records (never a host's summary), on the config page (its best run) and the run
page, and none at all where no request drafted."""

from __future__ import annotations

import re

import pytest

from leaderboard.models import RequestRecord, Run
from leaderboard.selectors.spread import acceptance_spread
from tests.support.measured_configs import measure


def measured_run(user, hardware, make_result, decode) -> Run:
    job = measure(user, hardware, make_result, 4, decode, runs=len(decode))
    return Run.objects.get(job=job, config=job.config)


def set_drafts(run: Run, drafts: list[tuple[int, int, float | None]]) -> None:
    """Overwrite the stored records' (drafted, accepted, tau), in index order."""
    records = list(run.requests.filter(phase="measure").order_by("index"))
    assert len(records) == len(drafts)
    for record, (drafted, accepted, tau) in zip(records, drafts, strict=True):
        record.draft_n, record.draft_n_accepted, record.tau = drafted, accepted, tau
    RequestRecord.objects.bulk_update(records, ["draft_n", "draft_n_accepted", "tau"])


@pytest.fixture
def run(user, hardware, make_result, models):
    return measured_run(user, hardware, make_result, [100.0, 101.0, 102.0, 103.0, 104.0])


def test_the_spread_is_counted_from_the_requests(run):
    set_drafts(run, [(10, 9, 4.0), (10, 2, 1.5), (10, 10, 6.0), (0, 0, None), (20, 11, 2.5)])

    spread = acceptance_spread(run=run)

    assert (spread["n"], spread["drafted"], spread["without_drafts"]) == (5, 4, 1)
    counts = [b["count"] for b in spread["bins"]]
    # 20% in the 20-30% bin, 55% in 50-60%, 90% in 90-100%, and 100% in the last bin too.
    assert counts == [0, 0, 1, 0, 0, 1, 0, 0, 0, 2]
    assert spread["acceptance"]["min"] == pytest.approx(0.2)
    assert spread["acceptance"]["max"] == pytest.approx(1.0)
    assert spread["acceptance"]["median"] == pytest.approx((0.55 + 0.9) / 2)
    assert spread["tau"]["median"] == pytest.approx((2.5 + 4.0) / 2)
    assert spread["tau"]["min"] == 1.5 and spread["tau"]["max"] == 6.0


def test_a_stored_record_that_accepted_more_than_it_drafted_stays_in_the_last_bin(run):
    # The door refuses such a record; one written past it still draws inside the histogram.
    set_drafts(run, [(10, 30, None)] * 5)

    spread = acceptance_spread(run=run)

    assert spread["bins"][-1]["count"] == 5 and spread["acceptance"]["max"] == 1.0
    assert spread["tau"] is None


def test_no_drafts_no_spread(run):
    set_drafts(run, [(0, 0, None)] * 5)
    assert acceptance_spread(run=run) is None
    assert acceptance_spread(run=None) is None


def test_the_config_and_run_pages_show_the_spread(client, run):
    set_drafts(run, [(10, 9, 4.0), (10, 2, 1.5), (10, 10, 6.0), (0, 0, None), (20, 11, 2.5)])

    for path in (f"/configs/{run.config.key}/", f"/runs/{run.pk}/"):
        page = client.get(path).content.decode()
        section = page[page.index('id="acceptance-spread"') :]
        assert "4 of 5 measured requests drafted; 1 drafted nothing" in section
        table = section[: section.index("</table>")]
        cells = re.findall(r'<td class="num">(\d+)</td>', table)
        assert cells == ["0", "0", "1", "0", "0", "1", "0", "0", "0", "2"]
        assert "median 72.5%" in section
        assert 'id="acceptance-spread-data"' in section


def test_a_baseline_has_no_spread_section(client, run):
    baseline = Run.objects.filter(config=run.config.baseline).first()
    assert baseline is not None
    for path in (f"/configs/{run.config.baseline.key}/", f"/runs/{baseline.pk}/"):
        response = client.get(path)
        assert response.status_code == 200
        assert 'id="acceptance-spread"' not in response.content.decode()


def test_the_run_resource_carries_the_spread_and_the_schema_names_it(client, run):
    set_drafts(run, [(10, 9, 4.0), (10, 2, 1.5), (10, 10, 6.0), (0, 0, None), (20, 11, 2.5)])

    data = client.get(f"/api/v1/runs/{run.pk}").json()

    assert data["acceptance_spread"] == acceptance_spread(run=run)
    assert data["acceptance_spread"]["drafted"] == 4
    baseline = Run.objects.filter(config=run.config.baseline).first()
    assert client.get(f"/api/v1/runs/{baseline.pk}").json()["acceptance_spread"] is None
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/json").content.decode()
    assert "acceptance_spread" in schema and "AcceptanceSpread" in schema


def test_the_run_page_lists_each_requests_verify_steps_beside_its_tau(client, run):
    records = list(run.requests.filter(phase="measure").order_by("index"))
    for steps, record in enumerate(records, start=7):
        record.verify_steps = steps
    RequestRecord.objects.bulk_update(records, ["verify_steps"])

    page = client.get(f"/runs/{run.pk}/").content.decode()
    table = page[page.index('id="requests-table"') :]
    header = re.findall(r"<th[^>]*>([^<]*)</th>", table[: table.index("</thead>")])
    column = header.index("Verify steps")
    assert header[column - 1 : column + 2] == ["Accepted", "Verify steps", "tau"]
    body = table[table.index("<tbody>") : table.index("</tbody>")]
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in body.split("</tr>") if "<td" in row]
    assert [row[column] for row in rows] == [str(7 + i) for i in range(len(records))]


def test_a_non_finite_number_stored_past_the_door_is_null_in_the_api_not_a_server_error(
    client, run
):
    record = run.requests.filter(phase="measure").order_by("index").first()
    RequestRecord.objects.filter(pk=record.pk).update(tau=float("inf"), ttft_ms=float("nan"))

    response = client.get(f"/api/v1/runs/{run.pk}")

    assert response.status_code == 200
    first = min(response.json()["requests"], key=lambda r: r["index"])
    assert first["tau"] is None and first["ttft_ms"] is None
    assert client.get(f"/runs/{run.pk}/").status_code == 200
    assert client.get(f"/configs/{run.config.key}/").status_code == 200
