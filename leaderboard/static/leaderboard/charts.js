// Draws every chart whose data a page embeds with json_script; the pages carry tables of the same numbers.
(function () {
  "use strict";
  if (typeof window.Chart === "undefined") return;

  function readData(id) {
    var element = document.getElementById(id);
    return element ? JSON.parse(element.textContent) : null;
  }

  function tokensPerRun(canvas, data) {
    var unit = data.definition === "end-to-end" ? "end-to-end tok/s" : "decode tok/s";
    return new window.Chart(canvas, {
      type: "line",
      data: {
        labels: data.labels,
        datasets: [
          { label: "95% CI low", data: data.ci95_low, borderDash: [4, 4], pointRadius: 0, borderWidth: 1, borderColor: "#9db3d6" },
          { label: "95% CI high", data: data.ci95_high, borderDash: [4, 4], pointRadius: 0, borderWidth: 1, borderColor: "#9db3d6", fill: "-1", backgroundColor: "rgba(120, 150, 210, 0.15)" },
          { label: "average " + unit, data: data.mean, borderColor: "#1f4fa3", backgroundColor: "#1f4fa3", pointRadius: 4, showLine: data.mean.length > 1 }
        ]
      },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        scales: { y: { title: { display: true, text: unit } }, x: { title: { display: true, text: "run (batch)" } } },
        plugins: { legend: { position: "bottom" } }
      }
    });
  }

  var drawers = { "tps-data": tokensPerRun };
  document.querySelectorAll("canvas[data-chart-source]").forEach(function (canvas) {
    var source = canvas.getAttribute("data-chart-source");
    var data = readData(source);
    if (data && drawers[source]) drawers[source](canvas, data);
  });
})();
