// Draws every chart whose data a page embeds with json_script; the pages carry tables of the same numbers.
(function () {
  "use strict";
  if (typeof window.Chart === "undefined") return;
  var Chart = window.Chart;
  var TPS_COLOUR = "#1f4fa3";  // tok/s bars: one colour, since the axis names each bar
  // Series colours: none is the green or red of a verdict, which mean faster and slower.
  var PALETTE = ["#1f4fa3", "#e08a00", "#6c3fa0", "#0f7c8c", "#b03a7a", "#4d4d4d", "#9a5b00", "#5b7fc7"];

  function readData(id) {
    var element = document.getElementById(id);
    return element ? JSON.parse(element.textContent) : null;
  }

  function color(i) { return PALETTE[i % PALETTE.length]; }

  function baseOptions(xTitle, yTitle) {
    return {
      responsive: true,
      maintainAspectRatio: false,
      animation: false,
      scales: {
        x: { title: { display: true, text: xTitle } },
        y: { title: { display: true, text: yTitle } }
      },
      plugins: { legend: { position: "bottom" } }
    };
  }

  // Prints a text next to each point of the datasets that carry `pointText` (e.g. acceptance %).
  var pointTextPlugin = {
    id: "pointText",
    afterDatasetsDraw: function (chart) {
      var ctx = chart.ctx;
      ctx.save();
      ctx.font = "11px system-ui, sans-serif";
      ctx.textAlign = "center";
      chart.data.datasets.forEach(function (dataset, index) {
        if (!dataset.pointText || !chart.isDatasetVisible(index)) return;
        chart.getDatasetMeta(index).data.forEach(function (point, i) {
          var text = dataset.pointText[i];
          if (text == null) return;
          ctx.fillStyle = dataset.borderColor;
          if (dataset.pointTextBeside) {
            // Beside the point, clear of a whisker through it.
            ctx.textAlign = "left";
            ctx.fillText(text, point.x + 9, point.y - 5);
            ctx.textAlign = "center";
          } else {
            ctx.fillText(text, point.x, point.y - 10);
          }
        });
      });
      ctx.restore();
    }
  };

  // What a speedup's colour says: the verdict layer's word on it against no drafting, as the
  // selector passes it ("faster"/"slower" only when the whole 95% interval is on one side of 1×);
  // any other word (an interval holding 1×, no interval) is "not established". Never decided here.
  var VERDICT_COLOURS = { faster: "#1d7a46", slower: "#c0392b", unclear: "#8c939d" };
  var VERDICT_WORDS = {
    faster: "faster than no drafting (clear at 95%)",
    slower: "slower than no drafting (clear at 95%)",
    unclear: "not established (could be either)"
  };
  var VERDICT_ORDER = ["faster", "slower", "unclear"];
  function verdictKey(verdict) { return verdict === "faster" || verdict === "slower" ? verdict : "unclear"; }
  function verdictColour(verdict) { return VERDICT_COLOURS[verdictKey(verdict)]; }

  // A legend of the verdict colours present, in place of one entry per dataset.
  function verdictLegend(verdicts) {
    var present = VERDICT_ORDER.filter(function (key) { return verdicts.some(function (v) { return verdictKey(v) === key; }); });
    return {
      display: present.length > 0,
      position: "bottom",
      onClick: function () {},
      labels: { generateLabels: function () {
        return present.map(function (key) {
          return { text: VERDICT_WORDS[key], fillStyle: VERDICT_COLOURS[key], strokeStyle: VERDICT_COLOURS[key], lineWidth: 0, hidden: false };
        });
      } }
    };
  }

  // A legend of the lines by name (their colour), then what the points' fill colours say.
  function linesAndVerdictsLegend(verdicts) {
    var legend = verdictLegend(verdicts);
    var verdictItems = legend.labels.generateLabels;
    legend.labels.generateLabels = function (chart) {
      return chart.data.datasets.map(function (dataset) {
        return { text: dataset.label, fillStyle: "#ffffff", strokeStyle: dataset.borderColor, lineWidth: 2, hidden: false };
      }).concat(verdictItems());
    };
    legend.display = true;
    return legend;
  }

  // The 1.0× line of a speedup chart (options.plugins.referenceLine: {scale, value, label}): where
  // a config is exactly as fast as no drafting. Drawn over the bars; its pixel is kept on the
  // chart ($referenceLine) for whoever checks where it went.
  var REFERENCE_COLOUR = "#111111";
  var referenceLinePlugin = {
    id: "referenceLine",
    afterDatasetsDraw: function (chart, args, options) {
      var scale = chart.scales[options.scale];
      if (!scale || options.value == null || options.value < scale.min || options.value > scale.max) return;
      var area = chart.chartArea;
      var pixel = Math.round(scale.getPixelForValue(options.value)) + 0.5;
      var ctx = chart.ctx;
      ctx.save();
      ctx.strokeStyle = REFERENCE_COLOUR;
      ctx.fillStyle = REFERENCE_COLOUR;
      ctx.lineWidth = 2;
      ctx.setLineDash([6, 4]);
      ctx.beginPath();
      if (scale.isHorizontal()) { ctx.moveTo(pixel, area.top); ctx.lineTo(pixel, area.bottom); }
      else { ctx.moveTo(area.left, pixel); ctx.lineTo(area.right, pixel); }
      ctx.stroke();
      ctx.setLineDash([]);
      ctx.font = "bold 11px system-ui, sans-serif";
      var text = options.label || "1.0× = no drafting";
      if (scale.isHorizontal()) {
        // Above the plot, centred on the line, where no bar can cover it.
        ctx.textAlign = "center";
        ctx.textBaseline = "bottom";
        ctx.fillText(text, Math.min(Math.max(pixel, area.left + 60), area.right - 60), area.top - 3);
      } else {
        // Near the axis, on a white box so a point or whisker under it cannot hide it.
        var width = ctx.measureText(text).width;
        ctx.fillStyle = "rgba(255, 255, 255, 0.85)";
        ctx.fillRect(area.left + 12, pixel - 16, width + 6, 13);
        ctx.fillStyle = REFERENCE_COLOUR;
        ctx.textAlign = "left";
        ctx.textBaseline = "bottom";
        ctx.fillText(text, area.left + 15, pixel - 4);
      }
      ctx.restore();
      chart.$referenceLine = { scale: options.scale, value: options.value, pixel: pixel, horizontal: scale.isHorizontal() };
    }
  };

  // The 1.0× line's options for a speedup axis, with room for the line within the axis.
  function referenceAt(options, scaleId) {
    options.plugins.referenceLine = { scale: scaleId, value: 1, label: "1.0× = no drafting" };
    var scale = options.scales[scaleId];
    if (scale.min === undefined && (scale.suggestedMin === undefined || scale.suggestedMin > 0.9)) scale.suggestedMin = 0.9;
    if (scale.suggestedMax === undefined || scale.suggestedMax < 1.1) scale.suggestedMax = 1.1;
    options.layout = options.layout || {};
    options.layout.padding = Object.assign({ top: 18 }, options.layout.padding || {});
  }

  // 95% intervals as whiskers (error bars) over bars or points: a dataset's `whiskers` holds
  // {low: [...], high: [...]}. A low end below the axis' minimum (0 for tok/s) is cut there and
  // marked with a red arrow, so a cut whisker does not pass for one that ends there; the
  // dataset's `clipped` flags say which. A high end past the axis' end gets an arrowhead.
  // Tooltips give the real ends. The count drawn is kept on the chart ($whiskers).
  var WHISKER_COLOUR = "#1a1a1a";
  var CLIPPED_MARK = "#d4000f";  // a red in no series' palette
  var whiskerPlugin = {
    id: "whiskers",
    afterDatasetsDraw: function (chart) {
      var ctx = chart.ctx;
      var drawn = 0;
      ctx.save();
      chart.data.datasets.forEach(function (dataset, index) {
        if (!dataset.whiskers || !chart.isDatasetVisible(index)) return;
        var meta = chart.getDatasetMeta(index);
        var horizontal = chart.options.indexAxis === "y";
        var scale = chart.scales[horizontal ? meta.xAxisID : meta.yAxisID];
        meta.data.forEach(function (element, i) {
          var low = dataset.whiskers.low[i], high = dataset.whiskers.high[i];
          if (low == null || high == null || element.skip) return;
          var cut = low < scale.min;
          var from = scale.getPixelForValue(Math.max(low, scale.min));
          var to = scale.getPixelForValue(Math.min(high, scale.max));
          var at = horizontal ? element.y : element.x;
          var cap = 6;
          ctx.strokeStyle = WHISKER_COLOUR;
          ctx.lineWidth = 2;
          ctx.beginPath();
          if (horizontal) {
            ctx.moveTo(from, at); ctx.lineTo(to, at);
            ctx.moveTo(to, at - cap); ctx.lineTo(to, at + cap);
            if (!cut) { ctx.moveTo(from, at - cap); ctx.lineTo(from, at + cap); }
          } else {
            ctx.moveTo(at, from); ctx.lineTo(at, to);
            ctx.moveTo(at - cap, to); ctx.lineTo(at + cap, to);
            if (!cut) { ctx.moveTo(at - cap, from); ctx.lineTo(at + cap, from); }
          }
          ctx.stroke();
          drawn++;
          if (high > scale.max) {
            // Cut at the axis' end too (a wide interval would squeeze every bar): an arrowhead
            // in the whisker's colour says it goes on.
            ctx.fillStyle = WHISKER_COLOUR;
            ctx.beginPath();
            if (horizontal) { ctx.moveTo(to, at); ctx.lineTo(to - 9, at - 5); ctx.lineTo(to - 9, at + 5); }
            else { ctx.moveTo(at, to); ctx.lineTo(at - 5, to + 9); ctx.lineTo(at + 5, to + 9); }
            ctx.closePath();
            ctx.fill();
          }
          if (!cut) return;
          ctx.fillStyle = CLIPPED_MARK;
          ctx.beginPath();
          if (horizontal) { ctx.moveTo(from, at); ctx.lineTo(from + 9, at - 6); ctx.lineTo(from + 9, at + 6); }
          else { ctx.moveTo(at, from); ctx.lineTo(at - 6, from - 9); ctx.lineTo(at + 6, from - 9); }
          ctx.closePath();
          ctx.fill();
        });
      });
      ctx.restore();
      chart.$whiskers = drawn;
    }
  };

  // A dataset's whiskers and their cut flags from the intervals' ends, cut at `floor`.
  function whiskersOf(lows, highs, floor) {
    return {
      whiskers: { low: lows, high: highs },
      clipped: lows.map(function (low, i) { return low != null && highs[i] != null && low < floor; })
    };
  }

  // The largest of the finite values, or undefined.
  function highest(values) {
    var found = values.filter(function (v) { return v != null && isFinite(v); });
    return found.length ? Math.max.apply(null, found) : undefined;
  }

  // A value axis' suggested top: room for the whiskers, but never more than 1.6 times the
  // largest value, so one very wide interval does not squeeze every bar to a sliver (its whisker
  // is cut at the axis' end with an arrowhead; its tooltip gives the real end).
  function axisTop(values, highs) {
    var top = highest(values), high = highest(highs);
    if (top === undefined) return high;
    return high === undefined ? top : Math.min(high, top * 1.6);
  }

  // The axis title, with a word on the mark where a whisker is cut.
  function titleWithMark(title, clipped) {
    return clipped.some(Boolean) ? title + "; red ◂ at 0: an interval that runs below 0, cut there" : title;
  }

  function bandText(low, high, format) {
    if (low == null) return "no interval";
    return "95% " + format(low) + " – " + format(high) + (low < 0 ? " (runs below 0, cut at 0: too few requests to place the mean)" : "");
  }

  function percent(value) { return value == null ? null : Math.round(value * 100) + "%"; }

  // tok/s of each run (batch) of a config, its 95% interval as a whisker, the axis from 0.
  function tokensPerRun(canvas, data) {
    var unit = data.definition === "end-to-end" ? "end-to-end tok/s" : "decode tok/s";
    var options = baseOptions("run (batch)", unit);
    options.scales.x.offset = true;  // a single run sits in the middle, not on the axis
    options.scales.y.min = 0;  // no tok/s axis runs below 0 (a whisker's low end is cut there)
    options.scales.y.suggestedMax = axisTop(data.mean, data.ci95_high);
    var whiskers = whiskersOf(data.ci95_low, data.ci95_high, 0);
    options.scales.y.title.text = titleWithMark(unit, whiskers.clipped).replace("red ◂", "red ▾");
    options.plugins.legend.display = false;
    var oneDecimal = function (value) { return value == null ? "–" : value.toFixed(1); };
    options.plugins.tooltip = { callbacks: { label: function (item) {
      var i = item.dataIndex;
      return oneDecimal(data.mean[i]) + " " + unit + " (" + bandText(data.ci95_low[i], data.ci95_high[i], oneDecimal) + ")";
    } } };
    return new Chart(canvas, {
      type: "line",
      data: {
        labels: data.labels,
        datasets: [{
          label: "average " + unit, data: data.mean, borderColor: TPS_COLOUR, backgroundColor: TPS_COLOUR,
          pointRadius: 4, showLine: data.mean.length > 1, whiskers: whiskers.whiskers, clipped: whiskers.clipped
        }]
      },
      options: options,
      plugins: [whiskerPlugin]
    });
  }

  function acceptance(canvas, data) {
    var options = baseOptions("draft position", "accepted (share of verify steps)");
    options.scales.y.min = 0;
    options.scales.y.max = 1;
    options.plugins.legend.display = false;
    return new Chart(canvas, {
      type: "bar",
      data: { labels: data.positions, datasets: [{ label: "accepted", data: data.rate, backgroundColor: "#1f4fa3" }] },
      options: options
    });
  }

  // One run's requests by their acceptance, in bins of 10% (selectors.spread).
  function acceptanceSpread(canvas, data) {
    var options = baseOptions("acceptance of the request (its accepted over its drafted tokens)", "requests");
    options.plugins.legend.display = false;
    options.scales.y.beginAtZero = true;
    options.scales.y.ticks = { precision: 0 };
    return new Chart(canvas, {
      type: "bar",
      data: {
        labels: data.bins.map(function (b) { return Math.round(b.low * 100) + "–" + Math.round(b.high * 100) + "%"; }),
        datasets: [{ label: "requests", data: data.bins.map(function (b) { return b.count; }), backgroundColor: "#1f4fa3", categoryPercentage: 0.95, barPercentage: 1.0 }]
      },
      options: options
    });
  }

  function memory(canvas, data) {
    var options = baseOptions("extra GPU memory over the baseline (GiB)", "speedup (×)");
    options.scales.x.type = "linear";
    options.scales.x.beginAtZero = true;
    options.scales.y.beginAtZero = true;
    referenceAt(options, "y");
    options.plugins.legend.display = false;
    options.plugins.tooltip = { callbacks: { label: function (item) { return data.points[item.dataIndex].label + ": " + item.parsed.y.toFixed(2) + "×, +" + item.parsed.x.toFixed(2) + " GiB"; } } };
    return new Chart(canvas, {
      type: "scatter",
      data: {
        datasets: [{
          label: "configs",
          data: data.points.map(function (p) { return { x: p.extra_gib, y: p.speedup }; }),
          pointRadius: data.points.map(function (p) { return p.key === data.highlight ? 8 : 4; }),
          backgroundColor: data.points.map(function (p) { return p.key === data.highlight ? "#6c3fa0" : "#1f4fa3"; })
        }]
      },
      options: options,
      plugins: [referenceLinePlugin]
    });
  }

  // One series per speculative type and protocol, each in its own tok/s definition and with its
  // own paired baseline (drawn only when every point of the series shares it).
  function nmax(canvas, data) {
    var datasets = [];
    data.types.forEach(function (type, i) {
      var name = type.label + " · " + type.protocol;
      var points = type.n_max.map(function (n, j) { return { x: n, y: type.tokens_per_second[j] }; });
      datasets.push({
        label: name + " (" + type.definition + " tok/s)", data: points, borderColor: color(i), backgroundColor: color(i), yAxisID: "y",
        whiskers: { low: type.ci95_low, high: type.ci95_high },
        pointText: type.acceptance.map(percent),
        pointStyle: type.n_max.map(function (n) { return n === type.best_n_max ? "star" : "circle"; }),
        pointRadius: type.n_max.map(function (n) { return n === type.best_n_max ? 10 : 4; }),
        pointBorderWidth: type.n_max.map(function (n) { return n === type.best_n_max ? 2 : 1; })
      });
      datasets.push({
        label: name + " tau", data: type.n_max.map(function (n, j) { return { x: n, y: type.tau[j] }; }),
        borderColor: color(i), backgroundColor: color(i), borderDash: [6, 4], pointRadius: 2, yAxisID: "tau"
      });
      if (type.baseline && type.baseline.tokens_per_second) {
        // A one-point series still gets a visible stretch of its baseline around the point.
        var low = Math.min.apply(null, type.n_max), high = Math.max.apply(null, type.n_max);
        if (low === high) { low -= 0.5; high += 0.5; }
        datasets.push({
          label: name + " paired baseline", data: [{ x: low, y: type.baseline.tokens_per_second }, { x: high, y: type.baseline.tokens_per_second }],
          borderColor: color(i), borderDash: [2, 3], pointRadius: 0, borderWidth: 1, yAxisID: "y"
        });
      }
    });
    var unit = data.definitions.length === 1 ? data.definitions[0] + " tok/s" : "tok/s (each series' own definition)";
    var options = baseOptions("n_max (draft tokens per step)", unit);
    options.scales.y.min = 0;
    options.scales.x.type = "linear";
    options.scales.x.ticks = { stepSize: 1 };
    options.scales.tau = { position: "right", title: { display: true, text: "tau (tokens per verify pass)" }, grid: { drawOnChartArea: false }, min: 0 };
    options.layout = { padding: { top: 16, right: 12 } };
    options.scales.y.suggestedMax = axisTop(
      [].concat.apply([], data.types.map(function (t) { return t.tokens_per_second; })),
      [].concat.apply([], data.types.map(function (t) { return t.ci95_high; })));
    return new Chart(canvas, { type: "line", data: { datasets: datasets }, options: options, plugins: [pointTextPlugin, whiskerPlugin] });
  }

  // Speedup against context depth for one target on one GPU (the canvas' data-chart-group picks
  // the selector's group; without one, every line), with the 1.0× line.
  function context(canvas, data) {
    var group = canvas.getAttribute("data-chart-group");
    var lines = group == null || !data.groups ? data.lines : data.groups[Number(group)].lines.map(function (i) { return data.lines[i]; });
    var depths = [];
    lines.forEach(function (line) { line.depths.forEach(function (d) { if (depths.indexOf(d) < 0) depths.push(d); }); });
    depths.sort(function (a, b) { return a - b; });
    var options = baseOptions("input tokens (context depth)", "speedup over baseline (×)");
    options.scales.x.type = "logarithmic";
    // Ticks at the measured depths only, labelled 512, 4K, 12K, 36K.
    options.scales.x.afterBuildTicks = function (axis) { axis.ticks = depths.map(function (d) { return { value: d }; }); };
    options.scales.x.ticks = { callback: function (value) { return value >= 1024 ? Math.round(value / 1024) + "K" : value; } };
    var all = [];
    lines.forEach(function (line) { all = all.concat(line.verdicts || []); });
    options.scales.y.suggestedMax = axisTop(
      [].concat.apply([], lines.map(function (l) { return l.speedup; })),
      [].concat.apply([], lines.map(function (l) { return l.speedup_ci95_high || []; })));
    referenceAt(options, "y");
    options.layout.padding.right = 48;
    options.plugins.legend = linesAndVerdictsLegend(all);
    options.plugins.tooltip = { callbacks: { label: function (item) {
      var line = lines[item.datasetIndex], i = item.dataIndex;
      var low = (line.speedup_ci95_low || [])[i], high = (line.speedup_ci95_high || [])[i];
      return line.depths[i] + " tokens: " + times(line.speedup[i]) + " (" + bandText(low, high, times) + "), " + VERDICT_WORDS[verdictKey((line.verdicts || [])[i])];
    } } };
    return new Chart(canvas, {
      type: "line",
      data: {
        datasets: lines.map(function (line, i) {
          return {
            label: group == null ? line.short_label : line.short_label.replace(" · " + line.gpu_name, "").replace(line.target_name + " · ", ""),
            data: line.depths.map(function (d, j) { return { x: d, y: line.speedup[j] }; }),
            borderColor: color(i), backgroundColor: color(i), borderWidth: 2, clip: 10,
            // Each depth's point in the colour of its verdict, its interval a whisker.
            pointBackgroundColor: (line.verdicts || []).map(verdictColour), pointBorderColor: color(i),
            pointRadius: 6, pointBorderWidth: 2, verdicts: line.verdicts,
            whiskers: { low: line.speedup_ci95_low || [], high: line.speedup_ci95_high || [] },
            pointText: line.speedup.map(function (s) { return s == null ? null : s.toFixed(2) + "×"; }),
            pointTextBeside: true
          };
        })
      },
      options: options,
      plugins: [referenceLinePlugin, pointTextPlugin, whiskerPlugin]
    });
  }

  // Speedup against concurrency, one line per speculative config, each level's 95% interval as
  // a whisker and its point filled in the colour of its verdict (Welch on the rounds).
  function concurrencySpeedup(canvas, data) {
    var lines = data.speedup_lines;
    var levels = [];
    lines.forEach(function (line) { line.levels.forEach(function (l) { if (levels.indexOf(l) < 0) levels.push(l); }); });
    levels.sort(function (a, b) { return a - b; });
    var all = [];
    lines.forEach(function (line) { all = all.concat(line.verdicts); });
    var options = baseOptions("concurrent requests", "speedup over baseline (×)");
    options.scales.x.type = "logarithmic";
    options.scales.x.afterBuildTicks = function (axis) { axis.ticks = levels.map(function (l) { return { value: l }; }); };
    options.scales.x.ticks = { callback: function (value) { return value; } };
    options.scales.y.min = 0;
    options.scales.y.suggestedMax = axisTop([].concat.apply([], lines.map(function (l) { return l.speedup; })), [].concat.apply([], lines.map(function (l) { return l.ci95_high; })));
    referenceAt(options, "y");
    options.layout.padding.right = 24;
    options.plugins.legend = linesAndVerdictsLegend(all);
    options.plugins.tooltip = { callbacks: { label: function (item) {
      var line = lines[item.datasetIndex], i = item.dataIndex;
      return line.label + ": " + times(line.speedup[i]) + " (" + bandText(line.ci95_low[i], line.ci95_high[i], times) + "), " + VERDICT_WORDS[verdictKey(line.verdicts[i])];
    } } };
    return new Chart(canvas, {
      type: "line",
      data: {
        datasets: lines.map(function (line, i) {
          return {
            label: line.label,
            data: line.levels.map(function (l, j) { return { x: l, y: line.speedup[j] }; }),
            borderColor: color(i), borderWidth: 2,
            pointBackgroundColor: line.verdicts.map(verdictColour), pointBorderColor: color(i),
            pointRadius: 6, pointBorderWidth: 2, clip: 10,  // the last level's point whole, not halved
            whiskers: { low: line.ci95_low, high: line.ci95_high }, verdicts: line.verdicts
          };
        })
      },
      options: options,
      plugins: [referenceLinePlugin, whiskerPlugin]
    });
  }

  // Best average tok/s per config, its 95% interval as a whisker; one colour (the axis names the
  // configs), the axis from 0.
  function compareTps(canvas, data) {
    var oneDecimal = function (value) { return value == null ? "–" : value.toFixed(1); };
    return barsWithWhiskers(canvas, {
      labels: data.labels, values: data.tokens_per_second, lows: data.ci95_low, highs: data.ci95_high,
      title: "best average tok/s (bar) and its 95% interval (whisker)", format: oneDecimal, unit: " tok/s",
      fixedHeight: true
    });
  }

  function compareAcceptance(canvas, data) {
    var width = Math.max.apply(null, data.acceptance_by_position.map(function (a) { return a.length; }).concat([0]));
    var labels = [];
    for (var i = 1; i <= width; i++) labels.push(i);
    var options = baseOptions("draft position", "accepted (share of verify steps)");
    options.scales.y.min = 0;
    options.scales.y.max = 1;
    return new Chart(canvas, {
      type: "line",
      data: {
        labels: labels,
        datasets: data.labels.map(function (label, i) {
          return { label: label, data: data.acceptance_by_position[i], borderColor: color(i), backgroundColor: color(i), pointRadius: 3 };
        })
      },
      options: options
    });
  }

  function compareDepths(canvas, data) {
    var options = baseOptions("input tokens (context depth)", "decode tok/s");
    options.scales.y.min = 0;
    options.scales.x.type = "logarithmic";
    var depths = [];
    data.depths.forEach(function (series) { series.depths.forEach(function (d) { if (depths.indexOf(d) < 0) depths.push(d); }); });
    options.scales.x.afterBuildTicks = function (axis) { axis.ticks = depths.map(function (d) { return { value: d }; }); };
    options.scales.x.ticks = { callback: function (value) { return value >= 1024 ? Math.round(value / 1024) + "K" : value; } };
    return new Chart(canvas, {
      type: "line",
      data: {
        datasets: data.labels.map(function (label, i) {
          var series = data.depths[i];
          return {
            label: label, borderColor: color(i), backgroundColor: color(i), pointRadius: 4,
            data: series.depths.map(function (d, j) { return { x: d, y: series.tokens_per_second[j] }; })
          };
        })
      },
      options: options
    });
  }

  // Aggregate tok/s against concurrency: one line per config, baselines dashed, each line's
  // crossover (the lowest level with a speedup below 1) drawn as a larger triangle.
  function concurrency(canvas, data) {
    var options = baseOptions("concurrent requests", "aggregate tok/s (all requests of a round)");
    options.scales.x.type = "logarithmic";
    options.scales.x.afterBuildTicks = function (axis) { axis.ticks = data.levels.map(function (l) { return { value: l }; }); };
    options.scales.x.ticks = { callback: function (value) { return value; } };
    options.scales.y.min = 0;
    options.layout = { padding: { top: 16, right: 36 } };  // room for the crossover's label
    return new Chart(canvas, {
      type: "line",
      data: {
        datasets: data.lines.map(function (line, i) {
          var crossing = line.levels.map(function (level) { return level === line.crossover; });
          return {
            label: line.label + (line.crossover ? " (crossover at " + line.crossover + ")" : ""),
            data: line.levels.map(function (level, j) { return { x: level, y: line.aggregate[j] }; }),
            borderColor: color(i), backgroundColor: color(i), borderDash: line.baseline ? [6, 4] : [],
            pointStyle: crossing.map(function (c) { return c ? "triangle" : "circle"; }),
            pointRadius: crossing.map(function (c) { return c ? 9 : 4; }),
            pointText: crossing.map(function (c) { return c ? "crossover" : null; })
          };
        })
      },
      options: options,
      plugins: [pointTextPlugin]
    });
  }

  // One config's categories: acceptance (left axis) and speedup over its baseline (right axis).
  function categories(canvas, data) {
    var options = baseOptions("task category", data.speculative ? "acceptance (share of drafted tokens)" : "decode tok/s");
    var datasets;
    if (data.speculative) {
      options.scales.y.min = 0;
      options.scales.y.max = 1;
      options.scales.speedup = { position: "right", title: { display: true, text: "speedup over the baseline (×)" }, grid: { drawOnChartArea: false }, min: 0 };
      referenceAt(options, "speedup");
      options.plugins.referenceLine.label = "1.0× speedup (right axis) = no drafting";
      // Speedup bars in the colour of the verdicts' word on them (green only where faster).
      var speedupVerdicts = data.speedup_verdicts || data.speedup.map(function () { return null; });
      datasets = [
        {
          label: "acceptance", data: data.acceptance, backgroundColor: TPS_COLOUR, yAxisID: "y",
          whiskers: { low: data.acceptance_ci95_low || [], high: data.acceptance_ci95_high || [] }
        },
        {
          label: "speedup", data: data.speedup, backgroundColor: speedupVerdicts.map(verdictColour), yAxisID: "speedup",
          whiskers: { low: data.speedup_ci95_low || [], high: data.speedup_ci95_high || [] }, verdicts: speedupVerdicts
        }
      ];
      options.scales.speedup.suggestedMax = axisTop(data.speedup, data.speedup_ci95_high || []);
      var legend = verdictLegend(speedupVerdicts);
      var verdictItems = legend.labels.generateLabels;
      legend.labels.generateLabels = function () {
        return [{ text: "acceptance (left axis)", fillStyle: TPS_COLOUR, strokeStyle: TPS_COLOUR, lineWidth: 0, hidden: false }]
          .concat(verdictItems().map(function (item) { item.text = "speedup: " + item.text; return item; }));
      };
      legend.display = true;
      options.plugins.legend = legend;
    } else {
      options.scales.y.min = 0;
      datasets = [{ label: "decode tok/s", data: data.decode, backgroundColor: "#1f4fa3" }];
    }
    return new Chart(canvas, { type: "bar", data: { labels: data.categories, datasets: datasets }, options: options, plugins: [referenceLinePlugin, whiskerPlugin] });
  }

  // Horizontal bars with a 95% whisker over each, one bar per label. A speedup chart
  // (spec.verdicts given) colours each bar by its verdict against no drafting and draws the 1.0×
  // line; a tok/s chart is one colour and starts at 0.
  function barsWithWhiskers(canvas, spec) {
    // Tall enough for every bar to keep its label readable (Chart.js fills its parent), and for
    // the legend, which wraps to three lines on a phone.
    if (!spec.fixedHeight) canvas.parentNode.style.height = Math.max(240, 120 + spec.labels.length * 32) + "px";
    var speedup = !!spec.verdicts;
    var options = baseOptions(spec.title, "config");
    options.indexAxis = "y";
    options.scales.x.min = 0;
    options.scales.x.suggestedMax = axisTop(spec.values, spec.highs);
    options.scales.x.grace = "5%";  // the longest bar ends inside the plot, not on its edge
    options.scales.y.title.display = false;
    options.scales.y.ticks = { autoSkip: false };  // every bar keeps its name, phones included
    options.plugins.tooltip = { callbacks: { label: function (item) {
      var i = item.dataIndex;
      var words = spec.format(spec.values[i]) + (spec.unit || "") + " (" + bandText(spec.lows[i], spec.highs[i], spec.format) + ")";
      return speedup ? [words, VERDICT_WORDS[verdictKey(spec.verdicts[i])]] : words;
    } } };
    var whiskers = whiskersOf(spec.lows, spec.highs, 0);
    options.scales.x.title.text = titleWithMark(options.scales.x.title.text, whiskers.clipped);
    var plugins = [whiskerPlugin];
    if (speedup) {
      options.plugins.legend = verdictLegend(spec.verdicts);
      referenceAt(options, "x");
      plugins.unshift(referenceLinePlugin);
    } else {
      options.plugins.legend.display = false;
    }
    // On a narrow screen a long name goes on several lines, so the bars keep their width.
    var narrow = canvas.parentNode.clientWidth < 600;
    return new Chart(canvas, {
      type: "bar",
      data: {
        labels: narrow ? spec.labels.map(function (label) { return wrapped(label, 22); }) : spec.labels,
        datasets: [{
          label: spec.title, data: spec.values, whiskers: whiskers.whiskers, clipped: whiskers.clipped,
          verdicts: spec.verdicts || null,
          backgroundColor: speedup ? spec.verdicts.map(verdictColour) : TPS_COLOUR,
          maxBarThickness: 28
        }]
      },
      options: options,
      plugins: plugins
    });
  }

  // A name of parts joined by " · " on lines of about `width` characters (one line if it fits).
  function wrapped(label, width) {
    if (label == null || label.length <= width) return label;
    var lines = [];
    label.split(" · ").forEach(function (part) {
      var last = lines.length - 1;
      if (last >= 0 && lines[last].length + part.length + 3 <= width) lines[last] += " · " + part;
      else lines.push(part);
    });
    return lines;
  }

  function times(value) { return value == null ? "–" : value.toFixed(2) + "×"; }

  // The front page: speedup by config for one target and hardware, with 95% whiskers.
  function speedupByConfig(canvas, data) {
    var points = data.points;
    return barsWithWhiskers(canvas, {
      labels: points.map(function (p) { return p.label; }),
      values: points.map(function (p) { return p.speedup; }),
      lows: points.map(function (p) { return p.ci95_low; }),
      highs: points.map(function (p) { return p.ci95_high; }),
      verdicts: points.map(function (p) { return p.verdict; }),
      title: "speedup over the paired baseline (×, " + data.definition + " tok/s)",
      format: times
    });
  }

  // /hardware/: the best decode tok/s per GPU for one target, with 95% whiskers.
  function hardwareTps(canvas, data) {
    var rows = data.rows;
    return barsWithWhiskers(canvas, {
      labels: rows.map(function (r) { return r.gpu_name; }),
      values: rows.map(function (r) { return r.tokens_per_second; }),
      lows: rows.map(function (r) { return r.ci95_low; }),
      highs: rows.map(function (r) { return r.ci95_high; }),
      title: "best decode tok/s", unit: " tok/s",
      format: function (value) { return value == null ? "–" : value.toFixed(1); }
    });
  }

  // /hardware/: the best speedup per GPU for one target, with 95% whiskers.
  function hardwareSpeedup(canvas, data) {
    var rows = data.rows.filter(function (r) { return r.speedup != null; });
    return barsWithWhiskers(canvas, {
      labels: rows.map(function (r) { return r.gpu_name; }),
      values: rows.map(function (r) { return r.speedup; }),
      lows: rows.map(function (r) { return r.speedup_ci95_low; }),
      highs: rows.map(function (r) { return r.speedup_ci95_high; }),
      verdicts: rows.map(function (r) { return r.speedup_verdict; }),
      title: "best speedup over the paired baseline (×)",
      format: times
    });
  }

  // Speedup against output length (issue 25): one config's speedup over its paired baseline at
  // each length, the x the tokens its requests generated, each length's 95% interval as a
  // whisker, its point filled in the colour of its verdict (the selector's word) and 1.0× drawn.
  function outputLengthSpeedup(canvas, data) {
    var options = baseOptions("output tokens per request (generated)", "speedup over the paired baseline (×, decode tok/s)");
    options.scales.x.type = "logarithmic";
    options.scales.x.afterBuildTicks = function (axis) { axis.ticks = data.lengths.map(function (l) { return { value: l }; }); };
    options.scales.x.ticks = { callback: function (value) { return value >= 1024 && value % 1024 === 0 ? value / 1024 + "K" : value; } };
    options.scales.y.min = 0;
    options.scales.y.suggestedMax = highest(data.ci95_high.concat(data.speedup));
    referenceAt(options, "y");
    options.layout.padding.right = 24;
    options.plugins.legend = verdictLegend(data.verdicts);
    options.plugins.tooltip = { callbacks: { label: function (item) {
      var i = item.dataIndex;
      var asked = data.asked[i] !== data.lengths[i] ? " (asked " + data.asked[i] + ")" : "";
      return data.lengths[i] + " tokens" + asked + ": " + times(data.speedup[i]) + " (" + bandText(data.ci95_low[i], data.ci95_high[i], times) + "), " + VERDICT_WORDS[verdictKey(data.verdicts[i])];
    } } };
    return new Chart(canvas, {
      type: "line",
      data: {
        datasets: [{
          label: data.label,
          data: data.lengths.map(function (l, j) { return { x: l, y: data.speedup[j] }; }),
          borderColor: PALETTE[0], borderWidth: 2,
          pointBackgroundColor: data.verdicts.map(verdictColour), pointBorderColor: PALETTE[0],
          pointRadius: 6, pointBorderWidth: 2,
          whiskers: { low: data.ci95_low, high: data.ci95_high }, verdicts: data.verdicts
        }]
      },
      options: options,
      plugins: [referenceLinePlugin, whiskerPlugin]
    });
  }

  // Throughput per GPU against tok/s per user (InferenceX's trade-off view): one curve per
  // config, a point per concurrency level labelled with the level, baselines dashed, and the
  // Pareto frontier of the point estimates as a wide grey band under them.
  function pareto(canvas, data) {
    var options = baseOptions("tok/s per user (1000 / median TPOT ms)", "throughput per GPU (aggregate tok/s / " + data.gpu_count + " GPU" + (data.gpu_count === 1 ? "" : "s") + ")");
    options.scales.x.min = 0;
    options.scales.y.min = 0;
    options.layout = { padding: { top: 16, right: 24 } };
    options.plugins.tooltip = { callbacks: { label: function (item) {
      var point = item.dataset.points[item.dataIndex];
      return item.dataset.label + ", " + point.concurrency + " concurrent: " + point.per_user.toFixed(1) + " tok/s per user, " + point.per_gpu.toFixed(1) + " tok/s per GPU";
    } } };
    var datasets = data.curves.map(function (curve, i) {
      return {
        label: curve.label,
        points: curve.points,
        data: curve.points.map(function (p) { return { x: p.per_user, y: p.per_gpu }; }),
        showLine: true, borderColor: color(i), backgroundColor: color(i),
        borderDash: curve.baseline ? [6, 4] : [], pointRadius: 4,
        pointText: curve.points.map(function (p) { return String(p.concurrency); })
      };
    });
    if (data.frontier.length > 1) {
      datasets.push({
        label: "Pareto frontier (point estimates)", points: data.frontier,
        data: data.frontier.map(function (p) { return { x: p.per_user, y: p.per_gpu }; }),
        showLine: true, borderColor: "rgba(140, 147, 157, 0.45)", backgroundColor: "rgba(140, 147, 157, 0.45)",
        borderWidth: 10, pointRadius: 0, order: 10
      });
    }
    return new Chart(canvas, { type: "scatter", data: { datasets: datasets }, options: options, plugins: [pointTextPlugin] });
  }

  var drawers = {
    "tps-data": tokensPerRun,
    "pareto-data": pareto,
    "acceptance-data": acceptance,
    "acceptance-spread-data": acceptanceSpread,
    "memory-data": memory,
    "nmax-data": nmax,
    "context-data": context,
    "compare-data:tps": compareTps,
    "compare-data:acceptance": compareAcceptance,
    "compare-data:depths": compareDepths,
    "concurrency-data": concurrency,
    "concurrency-data:speedup": concurrencySpeedup,
    "config-concurrency-data": concurrency,
    "output-length-data": outputLengthSpeedup,
    "category-data": categories,
    "speedup-data": speedupByConfig,
    "hardware-comparison-data:tps": hardwareTps,
    "hardware-comparison-data:speedup": hardwareSpeedup
  };
  document.querySelectorAll("canvas[data-chart-source]").forEach(function (canvas) {
    var source = canvas.getAttribute("data-chart-source");
    var kind = canvas.getAttribute("data-chart-kind");
    var drawer = drawers[kind ? source + ":" + kind : source];
    var data = readData(source);
    if (data && drawer) {
      drawer(canvas, data);
      canvas.setAttribute("data-drawn", "true");
    }
  });
})();
