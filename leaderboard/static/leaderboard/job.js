// Polls the job's JSON API while it runs and updates the status panel; reloads once it finishes.
(function () {
  "use strict";
  var panel = document.getElementById("job-status");
  if (!panel || panel.getAttribute("data-active") !== "true") return;
  var url = panel.getAttribute("data-status-url");

  // A linear estimate, as the server renders it: elapsed per request done, times requests to go.
  function remaining(progress) {
    if (!progress.done || !progress.total || progress.elapsed_s == null || progress.done >= progress.total) return "?";
    return Math.round(progress.elapsed_s / progress.done * (progress.total - progress.done));
  }

  function show(job) {
    var progress = job.progress || {};
    var values = {
      status: job.status, phase: progress.phase || "–", done: progress.done, total: progress.total || "?",
      tokens: progress.tokens, elapsed_s: progress.elapsed_s == null ? 0 : Math.round(progress.elapsed_s),
      remaining_s: remaining(progress), queue_position: job.queue_position
    };
    // The queue standing only says something while the job waits.
    var standing = panel.querySelector("#queue-standing");
    if (standing && job.status !== "queued") standing.hidden = true;
    Object.keys(values).forEach(function (name) {
      var element = panel.querySelector('[data-field="' + name + '"]');
      if (element) element.textContent = values[name];
    });
    // A Hugging Face model being fetched by the GPU host, in the server's own words.
    var download = panel.querySelector('[data-field="download"]');
    if (download) {
      download.textContent = progress.download || "";
      download.hidden = !progress.download;
    }
    var bar = panel.querySelector("progress");
    if (bar) bar.value = progress.percent || 0;
    // The engine's recent log, as the worker last sent it.
    var log = document.querySelector("#engine-log [data-log]");
    if (log && job.log_tail) {
      log.textContent = job.log_tail;
      log.parentNode.hidden = false;
      log.scrollTop = log.scrollHeight;
    }
  }

  function poll() {
    fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (job) {
        if (!job) return setTimeout(poll, 5000);
        show(job);
        if (job.status === "queued" || job.status === "running") setTimeout(poll, 2000);
        else window.location.reload();
      })
      .catch(function () { setTimeout(poll, 5000); });
  }
  setTimeout(poll, 1000);
})();
