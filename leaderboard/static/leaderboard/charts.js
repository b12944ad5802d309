// Draws every chart whose data a page embeds with json_script; the pages carry tables of the same numbers.
(function () {
  "use strict";
  if (typeof window.Chart === "undefined") return;
  var Chart = window.Chart;
  var PALETTE = ["#1f4fa3", "#c0392b", "#1d7a46", "#9a5b00", "#6c3fa0", "#0f7c8c", "#b03a7a", "#4d4d4d"];

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
          ctx.fillText(text, point.x, point.y - 10);
        });
      });
      ctx.restore();
    }
  };

  // An interval band whose low end is below 0 (too few requests to place the mean) is cut at the
  // axis' 0; its dataset's `clipped` flags say which, and each is marked with a red arrow pointing
  // left from 0, so a cut band does not pass for one that ends there. Tooltips give the real low.
  var CLIPPED_MARK = "#d4000f";  // a red in no series' palette
  var clippedIntervalPlugin = {
    id: "clippedInterval",
    afterDatasetsDraw: function (chart) {
      var ctx = chart.ctx;
      var zero = chart.scales.x.getPixelForValue(0);
      ctx.save();
      ctx.fillStyle = CLIPPED_MARK;
      chart.data.datasets.forEach(function (dataset, index) {
        if (!dataset.clipped || !chart.isDatasetVisible(index)) return;
        chart.getDatasetMeta(index).data.forEach(function (bar, i) {
          if (!dataset.clipped[i]) return;
          ctx.beginPath();
          ctx.moveTo(zero, bar.y);
          ctx.lineTo(zero + 9, bar.y - 6);
          ctx.lineTo(zero + 9, bar.y + 6);
          ctx.closePath();
          ctx.fill();
        });
      });
      ctx.restore();
    }
  };

  // The band of each interval, cut at 0, with the flags the plugin above reads.
  function intervalBands(lows, highs) {
    return {
      data: lows.map(function (low, i) { return low == null ? null : [Math.max(low, 0), highs[i]]; }),
      clipped: lows.map(function (low) { return low != null && low < 0; })
    };
  }

  // The axis title, with a word on the mark where a band is cut.
  function titleWithMark(title, bands) {
    return bands.clipped.some(Boolean) ? title + "; red ◂ at 0: an interval that runs below 0, cut there" : title;
  }

  function bandText(low, high, format) {
    if (low == null) return "no interval";
    return "95% " + format(low) + " – " + format(high) + (low < 0 ? " (runs below 0, cut at 0: too few requests to place the mean)" : "");
  }

  function percent(value) { return value == null ? null : Math.round(value * 100) + "%"; }

  function tokensPerRun(canvas, data) {
    var unit = data.definition === "end-to-end" ? "end-to-end tok/s" : "decode tok/s";
    return new Chart(canvas, {
      type: "line",
      data: {
        labels: data.labels,
        datasets: [
          { label: "95% CI low", data: data.ci95_low, borderDash: [4, 4], pointRadius: 0, borderWidth: 1, borderColor: "#9db3d6" },
          { label: "95% CI high", data: data.ci95_high, borderDash: [4, 4], pointRadius: 0, borderWidth: 1, borderColor: "#9db3d6", fill: "-1", backgroundColor: "rgba(120, 150, 210, 0.15)" },
          { label: "average " + unit, data: data.mean, borderColor: "#1f4fa3", backgroundColor: "#1f4fa3", pointRadius: 4, showLine: data.mean.length > 1 }
        ]
      },
      options: (function () {
        var options = baseOptions("run (batch)", unit);
        options.scales.x.offset = true;  // a single run sits in the middle, not on the axis
        return options;
      })()
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
    options.plugins.legend.display = false;
    options.plugins.tooltip = { callbacks: { label: function (item) { return data.points[item.dataIndex].label + ": " + item.parsed.y.toFixed(2) + "×, +" + item.parsed.x.toFixed(2) + " GiB"; } } };
    return new Chart(canvas, {
      type: "scatter",
      data: {
        datasets: [{
          label: "configs",
          data: data.points.map(function (p) { return { x: p.extra_gib, y: p.speedup }; }),
          pointRadius: data.points.map(function (p) { return p.key === data.highlight ? 8 : 4; }),
          backgroundColor: data.points.map(function (p) { return p.key === data.highlight ? "#c0392b" : "#1f4fa3"; })
        }]
      },
      options: options
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
    options.scales.x.type = "linear";
    options.scales.x.ticks = { stepSize: 1 };
    options.scales.tau = { position: "right", title: { display: true, text: "tau (tokens per verify pass)" }, grid: { drawOnChartArea: false }, min: 0 };
    options.layout = { padding: { top: 16, right: 12 } };
    return new Chart(canvas, { type: "line", data: { datasets: datasets }, options: options, plugins: [pointTextPlugin] });
  }

  function context(canvas, data) {
    var options = baseOptions("input tokens (context depth)", "speedup over baseline (×)");
    options.scales.x.type = "logarithmic";
    // Ticks at the measured depths only, labelled 512, 4K, 12K, 36K.
    options.scales.x.afterBuildTicks = function (axis) { axis.ticks = data.depths.map(function (d) { return { value: d }; }); };
    options.scales.x.ticks = { callback: function (value) { return value >= 1024 ? Math.round(value / 1024) + "K" : value; } };
    options.scales.y.suggestedMin = 1;
    return new Chart(canvas, {
      type: "line",
      data: {
        datasets: data.lines.map(function (line, i) {
          return {
            label: line.short_label,
            data: line.depths.map(function (d, j) { return { x: d, y: line.speedup[j] }; }),
            borderColor: color(i), backgroundColor: color(i), pointRadius: 4,
            pointText: line.speedup.map(function (s) { return s == null ? null : s.toFixed(2) + "×"; })
          };
        })
      },
      options: options,
      plugins: [pointTextPlugin]
    });
  }

  function compareTps(canvas, data) {
    var options = baseOptions("best average tok/s (bar) and its 95% interval (dark band)", "config");
    options.indexAxis = "y";
    options.plugins.legend.display = false;
    options.scales.x.min = 0;
    options.scales.y.title.display = false;
    var oneDecimal = function (value) { return value == null ? "–" : value.toFixed(1); };
    options.plugins.tooltip = { callbacks: { label: function (item) {
      var i = item.dataIndex;
      return oneDecimal(data.tokens_per_second[i]) + " tok/s (" + bandText(data.ci95_low[i], data.ci95_high[i], oneDecimal) + ")";
    } } };
    var bands = intervalBands(data.ci95_low, data.ci95_high);
    options.scales.x.title.text = titleWithMark(options.scales.x.title.text, bands);
    return new Chart(canvas, {
      type: "bar",
      data: {
        labels: data.labels,
        datasets: [
          // Drawn first so the tok/s bars sit under it; both share one slot per config.
          {
            label: "95% CI", order: 0, grouped: false, barPercentage: 0.25, backgroundColor: "rgba(20, 20, 20, 0.75)",
            data: bands.data, clipped: bands.clipped
          },
          { label: "tok/s", order: 1, grouped: false, data: data.tokens_per_second, backgroundColor: data.labels.map(function (_, i) { return color(i); }) }
        ]
      },
      options: options,
      plugins: [clippedIntervalPlugin]
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
    options.scales.y.beginAtZero = true;
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
      options.scales.speedup = { position: "right", title: { display: true, text: "speedup over the baseline (×)" }, grid: { drawOnChartArea: false }, beginAtZero: true };
      datasets = [
        { label: "acceptance", data: data.acceptance, backgroundColor: "#1f4fa3", yAxisID: "y" },
        { label: "speedup", data: data.speedup, backgroundColor: "#1d7a46", yAxisID: "speedup" }
      ];
    } else {
      options.scales.y.beginAtZero = true;
      datasets = [{ label: "decode tok/s", data: data.decode, backgroundColor: "#1f4fa3" }];
    }
    return new Chart(canvas, { type: "bar", data: { labels: data.categories, datasets: datasets }, options: options });
  }

  // Horizontal bars with a dark 95% band over each (compareTps's look); one bar per label.
  function barsWithIntervals(canvas, labels, values, lows, highs, xTitle, format) {
    // Tall enough for every bar to keep its label readable (Chart.js fills its parent).
    canvas.parentNode.style.height = Math.max(220, 48 + labels.length * 30) + "px";
    var options = baseOptions(xTitle, "config");
    options.indexAxis = "y";
    options.plugins.legend.display = false;
    options.scales.x.min = 0;
    options.scales.y.title.display = false;
    options.plugins.tooltip = { callbacks: { label: function (item) {
      var i = item.dataIndex;
      return format(values[i]) + " (" + bandText(lows[i], highs[i], format) + ")";
    } } };
    var bands = intervalBands(lows, highs);
    options.scales.x.title.text = titleWithMark(options.scales.x.title.text, bands);
    return new Chart(canvas, {
      type: "bar",
      data: {
        labels: labels,
        datasets: [
          {
            label: "95% interval", order: 0, grouped: false, barPercentage: 0.25, backgroundColor: "rgba(20, 20, 20, 0.75)",
            data: bands.data, clipped: bands.clipped
          },
          { label: xTitle, order: 1, grouped: false, data: values, backgroundColor: labels.map(function (_, i) { return color(i); }) }
        ]
      },
      options: options,
      plugins: [clippedIntervalPlugin]
    });
  }

  function times(value) { return value == null ? "–" : value.toFixed(2) + "×"; }

  // The front page: speedup by config for one target and hardware, with 95% intervals.
  function speedupByConfig(canvas, data) {
    var points = data.points;
    return barsWithIntervals(
      canvas,
      points.map(function (p) { return p.label; }),
      points.map(function (p) { return p.speedup; }),
      points.map(function (p) { return p.ci95_low; }),
      points.map(function (p) { return p.ci95_high; }),
      "speedup over the paired baseline (×, " + data.definition + " tok/s)",
      times
    );
  }

  // /hardware/: the best decode tok/s per GPU for one target, with 95% intervals.
  function hardwareTps(canvas, data) {
    var rows = data.rows;
    return barsWithIntervals(
      canvas,
      rows.map(function (r) { return r.gpu_name; }),
      rows.map(function (r) { return r.tokens_per_second; }),
      rows.map(function (r) { return r.ci95_low; }),
      rows.map(function (r) { return r.ci95_high; }),
      "best decode tok/s",
      function (value) { return value == null ? "–" : value.toFixed(1); }
    );
  }

  // /hardware/: the best speedup per GPU for one target, with 95% intervals.
  function hardwareSpeedup(canvas, data) {
    var rows = data.rows.filter(function (r) { return r.speedup != null; });
    return barsWithIntervals(
      canvas,
      rows.map(function (r) { return r.gpu_name; }),
      rows.map(function (r) { return r.speedup; }),
      rows.map(function (r) { return r.speedup_ci95_low; }),
      rows.map(function (r) { return r.speedup_ci95_high; }),
      "best speedup over the paired baseline (×)",
      times
    );
  }

  var drawers = {
    "tps-data": tokensPerRun,
    "acceptance-data": acceptance,
    "acceptance-spread-data": acceptanceSpread,
    "memory-data": memory,
    "nmax-data": nmax,
    "context-data": context,
    "compare-data:tps": compareTps,
    "compare-data:acceptance": compareAcceptance,
    "compare-data:depths": compareDepths,
    "concurrency-data": concurrency,
    "config-concurrency-data": concurrency,
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
