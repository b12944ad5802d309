"""Charts that cannot be misread, and the compare picker, in Debian's Chromium (issue 24).

Each chart is read back from the page as a person sees it, at 1440 and 390 px: the 1.0x line is
where 1.0 sits on the speedup axis and its pixels are on the canvas; each bar is painted in the
colour of the verdict the selector embedded; each 95% interval has a whisker with its cap on the
canvas; no tok/s axis starts below 0. The compare page finds configs by a part of their label.
Screenshots go to test-artifacts/screenshots/ as for the other browser tests.
"""

from __future__ import annotations

import re

import pytest

from tests.support.measured_configs import measure
from tests.system import test_browser, test_protocol_browser
from tests.system.test_browser import PHONE, SCREENSHOTS

pytestmark = [pytest.mark.browser]

# test_browser.py's Chromium and its page (which fails a test on any console error), and the
# concurrency results of test_protocol_browser.py.
browser = test_browser.browser
page = test_browser.page
models = test_browser.models
protocol_site = test_protocol_browser.protocol_site

WIDE = {"width": 1440, "height": 900}
# What each verdict is painted in (charts.js's VERDICT_COLOURS), as RGB.
VERDICT_RGB = {
    "faster": (0x1D, 0x7A, 0x46),
    "slower": (0xC0, 0x39, 0x2B),
    "other": (0x8C, 0x93, 0x9D),
}

# The chart's 1.0x line as the plugin left it, where 1.0 sits on its axis, and how many pixels
# along it (over the plot's length) are dark on the canvas.
REFERENCE_LINE = """canvas => {
  const chart = Chart.getChart(canvas);
  const line = chart.$referenceLine;
  if (!line) return null;
  const area = chart.chartArea, ratio = chart.currentDevicePixelRatio;
  const ctx = canvas.getContext("2d");
  const at = Math.floor(line.pixel * ratio);
  const from = Math.ceil((line.horizontal ? area.top : area.left) * ratio);
  const length = Math.floor((line.horizontal ? area.bottom : area.right) * ratio) - from;
  const data = line.horizontal ? ctx.getImageData(at - 1, from, 3, length).data
                               : ctx.getImageData(from, at - 1, length, 3).data;
  let dark = 0;
  for (let step = 0; step < length; step++) {
    let hit = false;
    for (let across = 0; across < 3; across++) {
      const i = (line.horizontal ? step * 3 + across : across * length + step) * 4;
      if (data[i] < 60 && data[i + 1] < 60 && data[i + 2] < 60 && data[i + 3] > 200) hit = true;
    }
    if (hit) dark++;
  }
  return { value: line.value, pixel: line.pixel,
           expected: chart.scales[line.scale].getPixelForValue(1), dark: dark, length: length };
}"""

# Each bar's label, the verdict its dataset carries and the colour painted inside it.
BAR_COLOURS = """canvas => {
  const chart = Chart.getChart(canvas);
  const dataset = chart.data.datasets[0], ratio = chart.currentDevicePixelRatio;
  const ctx = canvas.getContext("2d");
  return chart.getDatasetMeta(0).data.map((bar, i) => {
    const x = Math.round((Math.min(bar.base, bar.x) + 4) * ratio);
    const y = Math.round((bar.y + bar.height / 4) * ratio);
    const pixel = Array.from(ctx.getImageData(x, y, 1, 1).data.slice(0, 3));
    const label = chart.data.labels[i];  // on several lines on a narrow screen
    return { label: Array.isArray(label) ? label.join(" · ") : label, pixel: pixel };
  });
}"""

# Whiskers the plugin drew, and at each interval's high end the dark pixels across its cap.
WHISKER_CAPS = """canvas => {
  const chart = Chart.getChart(canvas);
  const ctx = canvas.getContext("2d"), ratio = chart.currentDevicePixelRatio;
  const horizontal = chart.options.indexAxis === "y";
  const caps = [];
  chart.data.datasets.forEach((dataset, d) => {
    if (!dataset.whiskers) return;
    const meta = chart.getDatasetMeta(d);
    const scale = chart.scales[horizontal ? meta.xAxisID : meta.yAxisID];
    meta.data.forEach((element, i) => {
      const high = dataset.whiskers.high[i];
      if (high == null || dataset.whiskers.low[i] == null) return;
      const end = scale.getPixelForValue(Math.min(high, scale.max));
      const at = horizontal ? element.y : element.x;
      let dark = 0;
      for (let k = -4; k <= 4; k++) {
        // The darkest of three pixels along the whisker at its end (the cap is 2 px wide).
        let hit = false;
        for (let along = -1; along <= 1; along++) {
          const x = Math.round((horizontal ? end + along : at + k) * ratio);
          const y = Math.round((horizontal ? at + k : end + along) * ratio);
          const p = ctx.getImageData(x, y, 1, 1).data;
          if (p[0] < 80 && p[1] < 80 && p[2] < 80 && p[3] > 200) hit = true;
        }
        if (hit) dark++;
      }
      caps.push(dark);
    });
  });
  return { drawn: chart.$whiskers, caps: caps };
}"""

# The colour inside each point of a line (beside its centre, clear of the whisker through it).
POINT_FILLS = """(canvas, index) => {
  const chart = Chart.getChart(canvas), ctx = canvas.getContext("2d");
  const ratio = chart.currentDevicePixelRatio;
  return chart.getDatasetMeta(index).data.map(point => Array.from(ctx.getImageData(
    Math.round((point.x + 3) * ratio), Math.round(point.y * ratio), 1, 1).data.slice(0, 3)));
}"""

AXIS_MIN = "(canvas, axis) => Chart.getChart(canvas).scales[axis].min"


@pytest.fixture
def speedups(transactional_db, user, models, hardware, enqueued, make_result):
    """Draft-simple configs against one baseline (50, 52 tok/s): two clearly faster, one within
    noise of it, one clearly slower, and one whose interval runs below 0 tok/s."""
    keys = {}
    for n_max, decode in (
        (4, [100.0, 104.0]),
        (3, [99.0, 103.0]),
        (2, [60.0, 60.5]),
        (5, [30.0, 31.0]),
    ):
        keys[n_max] = measure(user, hardware, make_result, n_max, decode).config.key
    keys["wide"] = measure(user, hardware, make_result, 6, [10.0, 60.0]).config.key
    return {"keys": keys, "hardware": hardware}


def shoot_at(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / f"{name}.png", full_page=True)


def drawn(page, selector: str):
    canvas = page.locator(selector)
    canvas.scroll_into_view_if_needed()
    assert canvas.get_attribute("data-drawn") == "true"
    return canvas


def assert_reference_line(canvas) -> None:
    line = canvas.evaluate(REFERENCE_LINE)
    assert line is not None, "no 1.0x line on a speedup chart"
    assert line["value"] == 1
    assert abs(line["pixel"] - line["expected"]) <= 1
    # Dashes of 6 on, 4 off: most of the plot's length is dark along the line.
    assert line["dark"] >= 0.5 * line["length"], line


def assert_whiskers(canvas, expected: int) -> None:
    whiskers = canvas.evaluate(WHISKER_CAPS)
    assert whiskers["drawn"] == expected == len(whiskers["caps"])
    assert all(dark >= 5 for dark in whiskers["caps"]), whiskers


def point_fills(canvas, index: int) -> list[tuple[int, int, int]]:
    return [tuple(pixel) for pixel in canvas.evaluate(POINT_FILLS, index)]


def rgb_of(verdict: str | None) -> tuple[int, int, int]:
    return VERDICT_RGB.get(verdict or "", VERDICT_RGB["other"])


@pytest.mark.parametrize("size", [WIDE, PHONE], ids=["1440", "390"])
def test_the_front_speedup_chart_colours_bars_by_verdict_with_whiskers_and_the_1x_line(
    live_server, page, speedups, size
):
    page.set_viewport_size(size)
    page.goto(live_server.url + "/")
    canvas = drawn(page, "#speedup-chart")
    points = page.evaluate("JSON.parse(document.getElementById('speedup-data').textContent).points")
    verdicts = {point["label"]: point["verdict"] for point in points}
    # The verdicts' words for these speeds: both ends and the middle are on the chart.
    assert verdicts["draft-simple · self-draft · n_max 4"] == "faster"
    assert verdicts["draft-simple · self-draft · n_max 5"] == "slower"
    assert verdicts["draft-simple · self-draft · n_max 2"] not in ("faster", "slower")

    for bar in canvas.evaluate(BAR_COLOURS):
        assert tuple(bar["pixel"]) == rgb_of(verdicts[bar["label"]]), bar
    assert_reference_line(canvas)
    assert_whiskers(canvas, sum(1 for p in points if p["ci95_low"] is not None))
    assert canvas.evaluate(AXIS_MIN, "x") >= 0
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, "the page scrolls sideways"
    canvas.screenshot(path=SCREENSHOTS / f"chart-speedup-{size['width']}.png")
    shoot_at(page, f"charts-front-{size['width']}")


@pytest.mark.parametrize("size", [WIDE, PHONE], ids=["1440", "390"])
def test_tok_s_charts_start_at_zero_and_draw_intervals_as_whiskers(
    live_server, page, speedups, size
):
    keys = speedups["keys"]
    page.set_viewport_size(size)
    page.goto(f"{live_server.url}/compare/?keys={keys['wide']},{keys[4]}")
    canvas = drawn(page, "#compare-tps-chart")
    # The wide interval runs below 0: the axis still starts at 0, the whisker is cut there.
    assert canvas.evaluate(AXIS_MIN, "x") == 0
    assert_whiskers(canvas, 2)
    datasets = canvas.evaluate("c => Chart.getChart(c).data.datasets.length")
    assert datasets == 1, "an interval drawn as a second bar"
    shoot_at(page, f"charts-compare-{size['width']}")

    page.goto(f"{live_server.url}/configs/{keys['wide']}/")
    canvas = drawn(page, "canvas[data-chart-source=tps-data]")
    assert canvas.evaluate(AXIS_MIN, "y") == 0
    # Its one batch's interval, as a whisker cut at 0 (and marked), not a shaded band.
    assert_whiskers(canvas, 1)
    assert canvas.evaluate("c => Chart.getChart(c).data.datasets[0].clipped") == [True]

    page.goto(f"{live_server.url}/nmax/")
    canvas = drawn(page, "#nmax-chart")
    assert canvas.evaluate(AXIS_MIN, "y") == 0
    sweep = page.evaluate("JSON.parse(document.getElementById('nmax-data').textContent)")
    intervals = sum(1 for t in sweep["types"] for low in t["ci95_low"] if low is not None)
    assert intervals >= 4
    assert_whiskers(canvas, intervals)
    shoot_at(page, f"charts-nmax-{size['width']}")


@pytest.mark.parametrize("size", [WIDE, PHONE], ids=["1440", "390"])
def test_speedup_against_concurrency_has_verdict_points_whiskers_and_the_1x_line(
    live_server, page, protocol_site, size
):
    page.set_viewport_size(size)
    hardware = protocol_site["hardware"].slug
    page.goto(f"{live_server.url}/concurrency/?target=tiny-qwen3&hardware={hardware}")
    assert drawn(page, "#concurrency-chart").evaluate(AXIS_MIN, "y") == 0
    canvas = drawn(page, "#concurrency-speedup-chart")
    lines = page.evaluate(
        "JSON.parse(document.getElementById('concurrency-data').textContent).speedup_lines"
    )
    assert len(lines) == 1
    line = lines[0]
    # 100/60 tok/s at one request, 260/330 at eight: faster at first, slower at the end.
    assert line["verdicts"][0] == "faster" and line["verdicts"][-1] == "slower"
    assert point_fills(canvas, 0) == [rgb_of(v) for v in line["verdicts"]]
    assert_reference_line(canvas)
    assert_whiskers(canvas, sum(1 for low in line["ci95_low"] if low is not None))
    canvas.screenshot(path=SCREENSHOTS / f"chart-concurrency-speedup-{size['width']}.png")


def test_speedup_against_context_is_one_chart_per_target_and_gpu_with_the_1x_line(
    live_server, page, transactional_db, user, models, hardware
):
    from tests.support.h200_results import load_h200_results

    load_h200_results(owner=user, hardware=hardware)
    page.set_viewport_size(WIDE)
    page.goto(live_server.url + "/context/")
    groups = page.evaluate("JSON.parse(document.getElementById('context-data').textContent).groups")
    canvases = page.locator("canvas[data-chart-source=context-data]")
    assert canvases.count() == len(groups) >= 1
    titles = page.locator(".context-group .chart-title").all_inner_texts()
    assert [f"{g['target_name']} on {g['gpu_name']}" for g in groups] == titles
    lines = page.evaluate("JSON.parse(document.getElementById('context-data').textContent).lines")
    for index, group in enumerate(groups):
        canvas = canvases.nth(index)
        canvas.scroll_into_view_if_needed()
        assert canvas.get_attribute("data-drawn") == "true"
        assert_reference_line(canvas)
        # Each depth's speedup interval as a whisker, its point in its verdict's colour.
        shown = [lines[i] for i in group["lines"]]
        intervals = sum(1 for line in shown for low in line["speedup_ci95_low"] if low is not None)
        assert intervals >= 1
        assert_whiskers(canvas, intervals)
        for number, line in enumerate(shown):
            assert point_fills(canvas, number) == [rgb_of(v) for v in line["verdicts"]]
    # The table gives each depth's speedup interval too.
    assert page.locator("#context-table .speedup-ci").count() >= 1
    shoot_at(page, "charts-context-1440")


@pytest.mark.parametrize("size", [WIDE, PHONE], ids=["1440", "390"])
def test_the_compare_picker_finds_configs_by_part_of_their_label(live_server, page, speedups, size):
    keys = speedups["keys"]
    page.set_viewport_size(size)
    page.goto(live_server.url + "/compare/")
    options = page.locator("#compare-choices option")
    labels = [options.nth(i).get_attribute("value") for i in range(options.count())]
    # Readable: target, spec type, draft, n_max, workload and GPU, then the key.
    label = next(text for text in labels if "n_max 3" in text)
    gpu = speedups["hardware"].gpu_name
    for part in ("tiny-qwen3", "draft-simple", "self-draft", "n_max 3", "quick", gpu, keys[3]):
        assert part in label

    # Text that names several configs is refused at the picker, with some of them named.
    page.fill("#compare-pick-1", "draft-simple")
    page.fill("#compare-pick-2", "n_max 4")
    page.get_by_role("button", name="Compare", exact=True).click()
    error = page.locator("#compare-picker-error")
    assert "matches" in error.inner_text() and "n_max" in error.inner_text()
    assert page.locator("#compare-table").count() == 0

    page.fill("#compare-pick-1", "N_MAX 3")
    page.fill("#compare-pick-2", "n_max 4")
    page.get_by_role("button", name="Compare", exact=True).click()
    page.wait_for_url(re.compile(rf"keys={keys[3]}%2C{keys[4]}$"))
    table = page.locator("#compare-table")
    assert "n_max 3" in table.locator("thead th").nth(1).inner_text()
    assert "n_max 4" in table.locator("thead th").nth(2).inner_text()
    # The picker shows what it compares, by label, ready to change one.
    assert page.input_value("#compare-pick-1") == label
    assert_whiskers(drawn(page, "#compare-tps-chart"), 2)
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, "the page scrolls sideways"
    page.locator("form.compare-picker").screenshot(
        path=SCREENSHOTS / f"compare-picker-{size['width']}.png"
    )

    # The address of a comparison still takes the keys.
    page.goto(f"{live_server.url}/compare/?keys={keys[2]},{keys[5]}")
    assert "n_max 5" in page.locator("#compare-table thead").inner_text()


def test_a_config_pages_speedup_charts_draw_the_1x_line(live_server, page, speedups, protocol_site):
    page.set_viewport_size(WIDE)
    # Speedup against the extra GPU memory a draft takes.
    page.goto(f"{live_server.url}/configs/{speedups['keys'][4]}/")
    assert_reference_line(drawn(page, "#memory-chart"))
    # Acceptance and speedup per task category: the line on the speedup axis.
    page.goto(f"{live_server.url}/configs/{protocol_site['categories']}/")
    canvas = drawn(page, "#category-chart")
    assert_reference_line(canvas)
    assert canvas.evaluate("c => Chart.getChart(c).$referenceLine.scale") == "speedup"
    chart = page.evaluate("JSON.parse(document.getElementById('category-data').textContent)")
    # 170, 120 and 90 tok/s against 100 in each category: faster, then the verdicts' word.
    assert chart["speedup_verdicts"][0] == "faster"
    painted = canvas.evaluate(
        """canvas => {
          const chart = Chart.getChart(canvas), ctx = canvas.getContext("2d");
          const ratio = chart.currentDevicePixelRatio;
          return chart.getDatasetMeta(1).data.map(bar => Array.from(ctx.getImageData(
            Math.round((bar.x + bar.width / 4) * ratio),
            Math.round((Math.max(bar.base, bar.y) - 4) * ratio), 1, 1).data.slice(0, 3)));
        }"""
    )
    assert [tuple(p) for p in painted] == [rgb_of(v) for v in chart["speedup_verdicts"]]
    intervals = [
        low for low in chart["speedup_ci95_low"] + chart["acceptance_ci95_low"] if low is not None
    ]
    assert_whiskers(canvas, len(intervals))
    canvas.screenshot(path=SCREENSHOTS / "chart-categories-1440.png")
    shoot_at(page, "charts-config-categories-1440")
